//! The server's front door: TLS (HTTP/1.1 and h2), bearer-token
//! authentication, routing and kube-apiserver's not-found behaviour,
//! version and health, discovery in both formats, kubeconfig.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;

use common::Kube;
use http::Version;
use serde_json::Value;

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[tokio::test]
async fn requests_without_or_with_a_wrong_token_get_401_status() {
    let k = Kube::start().await;
    for auth in [None, Some("Bearer nope"), Some("Basic abc")] {
        let mut b = http::Request::get(format!("{}/api/v1/namespaces", k.base()));
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        let req = b
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let resp = k.send(req).await;
        assert_eq!(resp.code(), 401);
        let s = resp.json();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["reason"], "Unauthorized");
        assert_eq!(s["code"], 401);
    }
}

#[tokio::test]
async fn serves_http1_and_h2() {
    let k = Kube::start().await;
    let h1 = common::client_http1(&k.server);
    let req = http::Request::get(format!("{}/version", k.base()))
        .header("authorization", format!("Bearer {}", k.token()))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let resp = h1.request(req).await.unwrap();
    assert_eq!(resp.version(), Version::HTTP_11);
    assert_eq!(resp.status(), 200);
    let h2 = common::client(&k.server, true);
    let req = http::Request::get(format!("{}/version", k.base()))
        .header("authorization", format!("Bearer {}", k.token()))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let resp = h2.request(req).await.unwrap();
    assert_eq!(resp.version(), Version::HTTP_2);
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn version_and_health() {
    let k = Kube::start().await;
    let v = k.get("/version").await.json();
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "33");
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1.33."));
    for p in ["/healthz", "/livez", "/readyz"] {
        let r = k.get(p).await;
        assert_eq!(r.code(), 200);
        assert_eq!(&r.body[..], b"ok");
    }
}

/// kube-apiserver's go-restful containers (`/api`, `/api/v1`, the
/// built-in groups) answer paths they do not know with a `Status`
/// (`serviceErrorHandler`); what no container claims reaches the
/// not-found handler at the end of the delegation chain, which is Go's
/// `http.NotFound`.
#[tokio::test]
async fn unknown_paths_get_the_404_of_whoever_owns_the_path() {
    let k = Kube::start().await;
    for p in [
        "/nope",
        "/apis/nope.example.com/v1",
        "/apis/nope.example.com/v1/widgets",
        "/openapi/v3/apis/nope.example.com/v1",
        "/openapi/v2",
    ] {
        let r = k.get(p).await;
        assert_eq!(r.code(), 404, "{p}");
        assert_eq!(&r.body[..], b"404 page not found\n", "{p}");
        assert!(r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
    }
    for p in [
        "/api/v1/widgets",
        "/api/v7",
        "/api/v1/a/b/c/d/e/f/g",
        "/api/nope",
        "/apis/apps/v7/deployments",
        "/apis/apps/v7",
        "/apis/apps/v1/namespaces/default/deployments/x/y/z",
        // A cluster-scoped resource under a namespace path.
        "/api/v1/namespaces/default/namespaces",
    ] {
        let r = k.get(p).await;
        assert_eq!(r.code(), 404, "{p}");
        assert_eq!(r.headers["content-type"], "application/json", "{p}");
        let s = r.json();
        assert_eq!(s["kind"], "Status", "{p}");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(
            s["message"],
            "the server could not find the requested resource"
        );
        assert_eq!(s["details"], serde_json::json!({}));
    }
}

#[tokio::test]
async fn the_root_lists_the_served_paths() {
    let k = Kube::start().await;
    let r = k.get("/").await;
    assert_eq!(r.code(), 200);
    let paths: Vec<String> = r.json()["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    for p in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/apis/apps",
        "/apis/apps/v1",
        "/healthz",
        "/livez",
        "/openapi/v3",
        "/readyz",
        "/version",
    ] {
        assert!(paths.iter().any(|x| x == p), "{p} in {paths:?}");
    }
    // Served, so listed: every path answers.
    for p in &paths {
        assert_eq!(k.get(p).await.code(), 200, "{p}");
    }
}

/// Go's net/http answers requests it cannot read with a plain-text body
/// naming the status (`server.go`: `"HTTP/1.1 " + publicErr +
/// errorHeaders + publicErr`), and closes the connection.
#[tokio::test]
async fn oversized_request_lines_and_headers_get_a_body() {
    let k = Kube::start().await;
    let host = k.server.addr();
    let long_uri = format!(
        "GET /api?x={} HTTP/1.1\r\nHost: {host}\r\n\r\n",
        "a".repeat(70_000)
    );
    // kube-apiserver reads up to 1 MiB of headers (MaxHeaderBytes); this
    // is well past it.
    let big_header = format!(
        "GET /api HTTP/1.1\r\nHost: {host}\r\nX-Big: {}\r\n\r\n",
        "a".repeat(2 << 20)
    );
    for (request, status) in [
        (long_uri, "414 URI Too Long"),
        (big_header, "431 Request Header Fields Too Large"),
    ] {
        let answer = common::raw_http1(&k.server, request.as_bytes()).await;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = answer.split_once("\r\n\r\n").expect("a response");
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status}\r\n")),
            "{head}"
        );
        let head = head.to_ascii_lowercase();
        assert!(
            head.contains("\r\ncontent-type: text/plain; charset=utf-8"),
            "{head}"
        );
        assert!(head.contains("\r\nconnection: close"), "{head}");
        assert_eq!(body, status);
    }
    // A header under kube-apiserver's limit is read.
    let fits = format!(
        "GET /version HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\nConnection: close\r\nX-Big: {}\r\n\r\n",
        k.token(),
        "a".repeat(512 << 10)
    );
    let answer = common::raw_http1(&k.server, fits.as_bytes()).await;
    assert!(
        answer.starts_with(b"HTTP/1.1 200 OK\r\n"),
        "{}",
        String::from_utf8_lossy(&answer[..answer.len().min(200)])
    );
}

#[tokio::test]
async fn legacy_discovery_documents() {
    let k = Kube::start().await;
    let api = k.get("/api").await.json();
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"], serde_json::json!(["v1"]));
    let apis = k.get("/apis").await.json();
    assert_eq!(apis["kind"], "APIGroupList");
    let names: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for g in [
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "admissionregistration.k8s.io",
    ] {
        assert!(names.contains(&g), "{g}");
    }
    let apps = k.get("/apis/apps/v1").await.json();
    assert_eq!(apps["kind"], "APIResourceList");
    assert_eq!(apps["groupVersion"], "apps/v1");
    let res = apps["resources"].as_array().unwrap();
    let find = |n: &str| {
        res.iter()
            .find(|r| r["name"] == n)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let deploy = find("deployments");
    assert_eq!(deploy["kind"], "Deployment");
    assert_eq!(deploy["singularName"], "deployment");
    assert_eq!(deploy["namespaced"], true);
    assert_eq!(deploy["shortNames"], serde_json::json!(["deploy"]));
    assert_eq!(deploy["categories"], serde_json::json!(["all"]));
    let scale = find("deployments/scale");
    assert_eq!(
        (
            scale["group"].as_str(),
            scale["version"].as_str(),
            scale["kind"].as_str()
        ),
        (Some("autoscaling"), Some("v1"), Some("Scale"))
    );
    assert_eq!(
        find("deployments/status")["verbs"],
        serde_json::json!(["get", "patch", "update"])
    );
    let core = k.get("/api/v1").await.json();
    let ns = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces")
        .unwrap()
        .clone();
    assert!(!ns["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v == "deletecollection"));
    let g = k.get("/apis/apps").await.json();
    assert_eq!(g["kind"], "APIGroup");
    assert_eq!(g["preferredVersion"]["groupVersion"], "apps/v1");
}

#[tokio::test]
async fn aggregated_discovery_is_chosen_by_accept_and_labelled_by_content_type() {
    let k = Kube::start().await;
    let r = k.get_accept("/apis", AGGREGATED).await;
    assert_eq!(
        r.headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let doc = r.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    let apps = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "apps")
        .unwrap()
        .clone();
    let deploy = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap()
        .clone();
    assert_eq!(deploy["scope"], "Namespaced");
    assert_eq!(deploy["responseKind"]["kind"], "Deployment");
    let subs: Vec<&str> = deploy["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(subs, ["scale", "status"]);
    let core = k.get_accept("/api", AGGREGATED).await.json();
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert!(core["items"][0]["metadata"].get("name").is_none());
    // v2beta1 when only that is asked for; legacy otherwise.
    let beta = k
        .get_accept(
            "/apis",
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        )
        .await;
    assert_eq!(beta.json()["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    let legacy = k.get_accept("/apis", "application/json").await;
    assert_eq!(legacy.headers["content-type"], "application/json");
    assert_eq!(legacy.json()["kind"], "APIGroupList");
    assert_eq!(
        k.get_accept("/apis", "application/vnd.kubernetes.protobuf")
            .await
            .code(),
        406
    );
}

#[tokio::test]
async fn system_namespaces_and_default_service_accounts_exist() {
    let k = Kube::start().await;
    let list = k.get("/api/v1/namespaces").await.json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    assert_eq!(list["items"][0]["status"]["phase"], "Active");
    assert!(
        list["items"][0].get("kind").is_none(),
        "built-in list items carry no kind"
    );
    assert_eq!(
        k.get("/api/v1/namespaces/kube-system/serviceaccounts/default")
            .await
            .code(),
        200
    );
}

#[tokio::test]
async fn kubeconfig_and_config_point_at_the_server() {
    let k = Kube::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/kubeconfig");
    k.server.write_kubeconfig(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(v["current-context"], "kubeforge");
    assert_eq!(v["clusters"][0]["cluster"]["server"], k.base());
    assert_eq!(v["users"][0]["user"]["token"], k.token());
    assert!(v["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .is_some());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(
        !format!("{:?}", k.server).contains(k.token()),
        "token never in Debug"
    );
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let k = Kube::start().await;
    let addr = k.server.addr();
    let Kube { server, .. } = k;
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn hostile_requests_get_answers_not_panics() {
    let k = Kube::start().await;
    let paths = [
        "/api/v1/namespaces/%ff%fe/configmaps",
        "/api/v1/namespaces/default/configmaps/%2e%2e",
        "/api/v1/namespaces/default/configmaps?limit=-1",
        "/api/v1/namespaces/default/configmaps?limit=abc",
        "/api/v1/namespaces/default/configmaps?watch=maybe",
        "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=99999999999999999999",
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=abc",
        "/api/v1/namespaces/default/configmaps?labelSelector=%C3%A9%3D%C3%A9",
        "/api/v1/namespaces/default/configmaps?fieldSelector=%C3%A9%3D1,metadata.name%3D%C3%A9",
        "/api/v1/namespaces/default/configmaps?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOjF9",
        "/api/v1/namespaces/default/configmaps?includeObject=Everything",
        "/apis/apps/v1/namespaces/default/deployments/x/scale/extra",
        "/apis//v1/x",
        "/api/v1/namespaces//configmaps",
    ];
    for p in paths {
        let r = k.get(p).await;
        // An answer, and never a server error: kube-apiserver meets bad
        // input with a 4xx (or serves it, as a list in a namespace with an
        // odd name).
        assert!(
            r.code() < 500,
            "{p}: {} {}",
            r.code(),
            String::from_utf8_lossy(&r.body)
        );
    }
    // The one 5xx: a resourceVersion the server has not reached, even
    // u64::MAX, is kube-apiserver's 504 "Too large resource version" after
    // its wait, not an overflow.
    let r = k
        .get("/api/v1/namespaces/default/configmaps?resourceVersion=18446744073709551615&resourceVersionMatch=Exact")
        .await;
    assert_eq!(r.code(), 504, "{}", String::from_utf8_lossy(&r.body));
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_map = format!("{}1{}", "{a: ".repeat(5_000), "}".repeat(5_000));
    let yaml_bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
    let cms = "/api/v1/namespaces/default/configmaps";
    for (ct, body) in [
        ("application/json", deep.as_str()),
        ("application/json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":1e400}}"),
        ("application/json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":[]}"),
        ("application/json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ok\",\"ownerReferences\":\"x\",\"finalizers\":7}}"),
        ("application/yaml", yaml_bomb),
        ("application/yaml", "\u{0}\u{1}"),
        ("application/yaml", deep.as_str()),
        ("application/yaml", deep_map.as_str()),
        ("application/vnd.kubernetes.protobuf", "k8s\u{0}\u{a}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}"),
        ("application/merge-patch+json", "{}"),
    ] {
        let r = k.raw("POST", cms, Some(ct), body.to_owned(), None).await;
        assert!(r.code() >= 400 && r.code() < 500, "{ct} {} {}", r.code(), String::from_utf8_lossy(&r.body));
    }
    for (ct, body) in [
        (
            "application/json-patch+json",
            "[{\"op\":\"move\",\"from\":\"/metadata\",\"path\":\"/metadata/x\"}]",
        ),
        (
            "application/json-patch+json",
            "[{\"op\":\"remove\",\"path\":\"/metadata\"}]",
        ),
        ("application/merge-patch+json", "{\"metadata\":null}"),
        ("application/merge-patch+json", "[]"),
        ("application/merge-patch+json", "{\"kind\":\"Secret\"}"),
    ] {
        k.configmap("default", "target", serde_json::json!({}))
            .await;
        let r = k
            .raw(
                "PATCH",
                &format!("{cms}/target"),
                Some(ct),
                body.to_owned(),
                None,
            )
            .await;
        assert!(
            r.code() >= 400 && r.code() < 500,
            "{body}: {} {}",
            r.code(),
            String::from_utf8_lossy(&r.body)
        );
        k.delete(&format!("{cms}/target")).await;
    }
    assert_eq!(k.get("/version").await.code(), 200, "still serving");
}
