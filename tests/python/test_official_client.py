"""The official Kubernetes Python client against kubeforge's API server.

Run by tests/tests/python_client.rs with KUBECONFIG pointing at a fresh
server. Objects are written as the client's users write them: typed models
without apiVersion or kind for built-ins, dicts for custom objects.
"""

import os
import threading
import unittest

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "pyclient"
GROUP, VERSION, PLURAL = "python.example.com", "v1", "gadgets"


def setUpModule():
    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    core = client.CoreV1Api()
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))


class Namespaces(unittest.TestCase):
    def test_create_read_list_delete(self):
        core = client.CoreV1Api()
        created = core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name="py-scratch", labels={"team": "py"}))
        )
        self.assertEqual(created.kind, "Namespace")
        self.assertEqual(created.status.phase, "Active")
        read = core.read_namespace("py-scratch")
        self.assertEqual(read.metadata.uid, created.metadata.uid)
        names = [n.metadata.name for n in core.list_namespace(label_selector="team=py").items]
        self.assertEqual(names, ["py-scratch"])
        core.delete_namespace("py-scratch")
        with self.assertRaises(ApiException) as gone:
            core.create_namespaced_config_map(
                "py-scratch", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late"))
            )
        self.assertIn(gone.exception.status, (403, 404))


class ConfigMaps(unittest.TestCase):
    def setUp(self):
        self.core = client.CoreV1Api()

    def test_create_read_replace_and_stale_replace(self):
        cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"color": "red"})
        created = self.core.create_namespaced_config_map(NS, cm)
        self.assertEqual(created.data, {"color": "red"})
        self.assertEqual(created.metadata.namespace, NS)
        read = self.core.read_namespaced_config_map("settings", NS)
        self.assertEqual(read.metadata.resource_version, created.metadata.resource_version)

        read.data["color"] = "blue"
        replaced = self.core.replace_namespaced_config_map("settings", NS, read)
        self.assertEqual(replaced.data["color"], "blue")
        self.assertNotEqual(replaced.metadata.resource_version, created.metadata.resource_version)

        # The copy read before the replace is stale now.
        created.data["color"] = "green"
        with self.assertRaises(ApiException) as conflict:
            self.core.replace_namespaced_config_map("settings", NS, created)
        self.assertEqual(conflict.exception.status, 409)
        self.assertIn("the object has been modified", conflict.exception.body)
        self.assertEqual(self.core.read_namespaced_config_map("settings", NS).data["color"], "blue")

        with self.assertRaises(ApiException) as duplicate:
            self.core.create_namespaced_config_map(NS, cm)
        self.assertEqual(duplicate.exception.status, 409)

    def test_generate_name(self):
        made = [
            self.core.create_namespaced_config_map(
                NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-", labels={"set": "gen"}))
            ).metadata.name
            for _ in range(3)
        ]
        self.assertEqual(len(set(made)), 3)
        for name in made:
            self.assertTrue(name.startswith("gen-") and len(name) == len("gen-") + 5, name)

    def test_pagination(self):
        for i in range(7):
            self.core.create_namespaced_config_map(
                NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"page-{i}", labels={"set": "page"}))
            )
        seen, token, pages = [], None, 0
        while True:
            page = self.core.list_namespaced_config_map(NS, label_selector="set=page", limit=3, _continue=token)
            pages += 1
            seen += [c.metadata.name for c in page.items]
            token = page.metadata._continue
            if not token:
                break
        self.assertEqual(pages, 3)
        self.assertEqual(sorted(seen), [f"page-{i}" for i in range(7)])

    def test_watch_from_a_resource_version(self):
        start = self.core.list_namespaced_config_map(NS, label_selector="set=watch").metadata.resource_version
        self.core.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="watched", labels={"set": "watch"}), data={"n": "1"})
        )
        self.core.patch_namespaced_config_map("watched", NS, {"data": {"n": "2"}})
        self.core.delete_namespaced_config_map("watched", NS)
        events = []
        w = watch.Watch()
        for event in w.stream(
            self.core.list_namespaced_config_map,
            NS,
            label_selector="set=watch",
            resource_version=start,
            timeout_seconds=10,
        ):
            events.append((event["type"], event["object"].data.get("n") if event["object"].data else None))
            if len(events) == 3:
                w.stop()
        self.assertEqual(events, [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")])
        self.assertIsInstance(event["object"], client.V1ConfigMap)

    def test_watch_sees_a_change_made_while_it_waits(self):
        w = watch.Watch()
        seen = []

        def later():
            self.core.create_namespaced_config_map(
                NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="live", labels={"set": "live"}))
            )

        start = self.core.list_namespaced_config_map(NS, label_selector="set=live").metadata.resource_version
        timer = threading.Timer(0.2, later)
        timer.start()
        for event in w.stream(
            self.core.list_namespaced_config_map, NS, label_selector="set=live", resource_version=start, timeout_seconds=10
        ):
            seen.append((event["type"], event["object"].metadata.name))
            w.stop()
        timer.join()
        self.assertEqual(seen, [("ADDED", "live")])


class CustomObjects(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ext = client.ApiextensionsV1Api()
        schema = client.V1JSONSchemaProps(
            type="object",
            properties={
                "spec": client.V1JSONSchemaProps(
                    type="object",
                    properties={
                        "size": client.V1JSONSchemaProps(type="integer", minimum=1, default=3),
                        "color": client.V1JSONSchemaProps(type="string"),
                    },
                ),
                "status": client.V1JSONSchemaProps(
                    type="object", properties={"ready": client.V1JSONSchemaProps(type="boolean")}
                ),
            },
        )
        crd = client.V1CustomResourceDefinition(
            metadata=client.V1ObjectMeta(name=f"{PLURAL}.{GROUP}"),
            spec=client.V1CustomResourceDefinitionSpec(
                group=GROUP,
                scope="Namespaced",
                names=client.V1CustomResourceDefinitionNames(plural=PLURAL, singular="gadget", kind="Gadget"),
                versions=[
                    client.V1CustomResourceDefinitionVersion(
                        name=VERSION,
                        served=True,
                        storage=True,
                        schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
                        subresources=client.V1CustomResourceSubresources(status={}),
                    )
                ],
            ),
        )
        ext.create_custom_resource_definition(crd)
        for _ in range(100):
            conditions = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}").status.conditions or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                return
            threading.Event().wait(0.05)
        raise AssertionError("the CRD never became Established")

    def test_defaults_pruning_and_status(self):
        api = client.CustomObjectsApi()
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Gadget",
            "metadata": {"name": "g1"},
            "spec": {"color": "red", "unknown": "dropped"},
            "status": {"ready": True},
        }
        created = api.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)
        self.assertEqual(created["spec"], {"color": "red", "size": 3})
        self.assertNotIn("status", created)  # status is a subresource: ignored on create
        self.assertEqual(created["metadata"]["generation"], 1)

        created["status"] = {"ready": True}
        status = api.replace_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "g1", created)
        self.assertEqual(status["status"], {"ready": True})
        self.assertEqual(status["metadata"]["generation"], 1)

        patched = api.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "g1", {"spec": {"size": 5}})
        self.assertEqual(patched["spec"]["size"], 5)
        self.assertEqual(patched["metadata"]["generation"], 2)
        self.assertEqual(patched["status"], {"ready": True})

        listed = api.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
        self.assertEqual([o["metadata"]["name"] for o in listed["items"]], ["g1"])

        with self.assertRaises(ApiException) as invalid:
            api.create_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL,
                {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Gadget", "metadata": {"name": "g2"}, "spec": {"size": 0}},
            )
        self.assertEqual(invalid.exception.status, 422)
        self.assertIn("spec.size", invalid.exception.body)

        api.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "g1")
        with self.assertRaises(ApiException) as gone:
            api.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "g1")
        self.assertEqual(gone.exception.status, 404)


class Leases(unittest.TestCase):
    def test_acquire_and_renew(self):
        coord = client.CoordinationV1Api()
        lease = client.V1Lease(
            metadata=client.V1ObjectMeta(name="py-leader"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
        )
        created = coord.create_namespaced_lease(NS, lease)
        self.assertEqual(created.spec.holder_identity, "a")
        created.spec.holder_identity = "b"
        created.spec.lease_transitions = 1
        renewed = coord.replace_namespaced_lease("py-leader", NS, created)
        self.assertEqual((renewed.spec.holder_identity, renewed.spec.lease_transitions), ("b", 1))


class Deployments(unittest.TestCase):
    def test_scale_subresource(self):
        apps = client.AppsV1Api()
        labels = {"app": "py-web"}
        deployment = client.V1Deployment(
            metadata=client.V1ObjectMeta(name="py-web"),
            spec=client.V1DeploymentSpec(
                replicas=1,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx")]),
                ),
            ),
        )
        created = apps.create_namespaced_deployment(NS, deployment)
        self.assertEqual(created.spec.strategy.type, "RollingUpdate")  # defaulted by the server
        scale = apps.read_namespaced_deployment_scale("py-web", NS)
        self.assertEqual(scale.spec.replicas, 1)
        self.assertEqual(scale.status.selector, "app=py-web")
        scale.spec.replicas = 4
        apps.replace_namespaced_deployment_scale("py-web", NS, scale)
        self.assertEqual(apps.read_namespaced_deployment("py-web", NS).spec.replicas, 4)
        apps.patch_namespaced_deployment_scale("py-web", NS, {"spec": {"replicas": 2}})
        self.assertEqual(apps.read_namespaced_deployment_scale("py-web", NS).spec.replicas, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
