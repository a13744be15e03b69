//! The core group (`""`, `v1`): one module per kind, and the PodSpec
//! defaults and checks every pod template shares ([`pod_spec`]).

pub(crate) mod configmap;
pub(crate) mod event;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod pod;
pub(crate) mod pod_spec;
pub(crate) mod secret;
pub(crate) mod service;
pub(crate) mod serviceaccount;

#[cfg(test)]
mod tests {
    use super::namespace::defaults as namespace;
    use super::node::defaults as node;

    use super::secret::defaults as secret;
    use super::service::{defaults as service, ip_families};
    use serde_json::json;

    /// `pkg/apis/core/v1/defaults_test.go`: `TestSetDefaultService`
    /// (sessionAffinity None without a config, type ClusterIP),
    /// `TestSetDefaultServicePort` and `TestSetDefaulServiceTargetPort`
    /// (protocol TCP, targetPort = port when 0 or ""),
    /// `TestSetDefaulServiceExternalTraffic` (Cluster for NodePort and
    /// LoadBalancer, nothing for ClusterIP),
    /// `TestSetDefaultServiceSessionAffinityConfig` (ClientIP → 10800 s);
    /// internalTrafficPolicy and allocateLoadBalancerNodePorts as
    /// `SetDefaults_Service` sets them.
    #[test]
    fn services_get_set_defaults_service() {
        let cases = [
            (
                json!({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}),
                json!({"sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster",
                    "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                              {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}),
            ),
            (
                json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 0}]}),
                json!({"sessionAffinity": "None", "type": "NodePort", "internalTrafficPolicy": "Cluster",
                    "externalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}),
            ),
            (
                json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local"}),
                json!({"sessionAffinity": "None", "type": "LoadBalancer", "internalTrafficPolicy": "Cluster",
                    "externalTrafficPolicy": "Local", "allocateLoadBalancerNodePorts": true}),
            ),
            (
                json!({"externalIPs": ["1.2.3.4"], "sessionAffinity": "ClientIP"}),
                json!({"type": "ClusterIP", "internalTrafficPolicy": "Cluster", "externalIPs": ["1.2.3.4"],
                    "externalTrafficPolicy": "Cluster", "sessionAffinity": "ClientIP",
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}),
            ),
            (
                json!({"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
                json!({"sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster"}),
            ),
            (
                json!({"type": "ExternalName", "externalName": "example.com"}),
                json!({"sessionAffinity": "None", "type": "ExternalName", "externalName": "example.com"}),
            ),
        ];
        for (input, expected) in cases {
            let mut svc = json!({"spec": input.clone()});
            service(&mut svc);
            assert_eq!(svc["spec"], expected, "{input}");
        }
    }

    /// `pkg/registry/core/service/storage/alloc.go`: headless without a
    /// selector is RequireDualStack with both families.
    #[test]
    fn ip_families_follow_the_allocator() {
        for (input, policy, families) in [
            (
                json!({"selector": {"a": "b"}}),
                "SingleStack",
                json!(["IPv4"]),
            ),
            (
                json!({"clusterIP": "None", "selector": {"a": "b"}}),
                "SingleStack",
                json!(["IPv4"]),
            ),
            (
                json!({"clusterIP": "None"}),
                "RequireDualStack",
                json!(["IPv4", "IPv6"]),
            ),
            (
                json!({"clusterIP": "None", "ipFamilyPolicy": "SingleStack"}),
                "SingleStack",
                json!(["IPv4"]),
            ),
        ] {
            let mut spec = input.as_object().cloned().unwrap();
            ip_families(&mut spec);
            assert_eq!(spec["ipFamilyPolicy"], policy, "{input}");
            assert_eq!(spec["ipFamilies"], families, "{input}");
        }
    }

    /// `TestSetDefaultSecret`, `SetDefaults_Namespace`'s name label,
    /// `TestSetDefaultNodeStatusAllocatable`.
    #[test]
    fn secrets_namespaces_and_nodes() {
        let mut s = json!({"stringData": {"k": "v"}});
        secret(&mut s);
        assert_eq!(s, json!({"type": "Opaque", "data": {"k": "dg=="}}));
        let mut s = json!({"type": "kubernetes.io/tls"});
        secret(&mut s);
        assert_eq!(s["type"], "kubernetes.io/tls");

        let mut ns = json!({"metadata": {"name": "team"}});
        namespace(&mut ns);
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": "team"})
        );

        let mut n = json!({"status": {"capacity": {"cpu": "4"}}});
        node(&mut n);
        assert_eq!(n["status"]["allocatable"], json!({"cpu": "4"}));
        let mut n = json!({"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}}});
        node(&mut n);
        assert_eq!(n["status"]["allocatable"], json!({"cpu": "3"}));
    }
}
