//! The probe and metrics endpoints: named liveness/readiness checks
//! ([`Probes`]) served as `/healthz` and `/readyz` in kube-apiserver's
//! text format, and a `prometheus-client` registry served as `/metrics` in
//! OpenMetrics text, by one small hyper server ([`HttpServer`]).
//!
//! Defaults bind to loopback: [`DEFAULT_PROBE_ADDRESS`] `127.0.0.1:8081`
//! and [`DEFAULT_METRICS_ADDRESS`] `127.0.0.1:8080`. controller-runtime
//! uses the same ports on every interface (`:8081`, `:8080`); these
//! endpoints are plain HTTP without authentication, so exposing them is a
//! deployment decision, not a default. In a pod, kubelet probes and
//! Prometheus connect to the pod IP: pass `:8081` / `:8080` (see
//! [`parse_bind_address`]) in the Deployment.

mod checks;
mod server;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use checks::{CheckError, Checks, Probes};
pub use server::{Endpoints, HttpServer, SharedRegistry, OPENMETRICS_CONTENT_TYPE};

use crate::manager::Error;

/// Where the probe server listens unless told otherwise.
pub const DEFAULT_PROBE_ADDRESS: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8081);

/// Where the metrics server listens unless told otherwise.
pub const DEFAULT_METRICS_ADDRESS: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// Parses a bind address as controller-runtime's flags take it
/// (`--health-probe-bind-address`, `--metrics-bind-address`):
///
/// - `"0"` turns the server off (`Ok(None)`);
/// - `":8081"` listens on every IPv4 interface (`0.0.0.0:8081`);
/// - `"127.0.0.1:8081"`, `"[::1]:8081"`, `"localhost:8081"`.
///
/// Other host names are refused rather than resolved.
pub fn parse_bind_address(text: &str) -> Result<Option<SocketAddr>, Error> {
    let invalid = |problem: &str| Error::InvalidBindAddress {
        address: text.to_owned(),
        problem: problem.to_owned(),
    };
    let text_trimmed = text.trim();
    if text_trimmed == "0" {
        return Ok(None);
    }
    if let Some(port) = text_trimmed.strip_prefix(':') {
        let port: u16 = port
            .parse()
            .map_err(|_| invalid("the port is not a number from 0 to 65535"))?;
        return Ok(Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port,
        )));
    }
    if let Ok(addr) = text_trimmed.parse::<SocketAddr>() {
        return Ok(Some(addr));
    }
    match text_trimmed.rsplit_once(':') {
        Some(("localhost", port)) => {
            let port: u16 = port
                .parse()
                .map_err(|_| invalid("the port is not a number from 0 to 65535"))?;
            Ok(Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)))
        }
        Some(_) => Err(invalid(
            "expected an IP address and port (e.g. 127.0.0.1:8081), :PORT, or 0 to disable",
        )),
        None => Err(invalid("missing port (e.g. :8081)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_parse_like_controller_runtime_flags() {
        let p = |s: &str| parse_bind_address(s).unwrap();
        assert_eq!(p("0"), None);
        assert_eq!(p(":8081"), Some("0.0.0.0:8081".parse().unwrap()));
        assert_eq!(p("127.0.0.1:8080"), Some(DEFAULT_METRICS_ADDRESS));
        assert_eq!(p("localhost:8081"), Some(DEFAULT_PROBE_ADDRESS));
        assert_eq!(p("[::1]:9000"), Some("[::1]:9000".parse().unwrap()));
        for bad in [
            "",
            "8080",
            ":http",
            ":70000",
            "example.com:80",
            "localhost:x",
        ] {
            let err = parse_bind_address(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidBindAddress { .. }),
                "{bad:?}: {err}"
            );
        }
    }
}
