//! Request authentication: turns a [`Auth`] into the `Authorization`
//! header of each request, refreshing what can go stale.
//!
//! - Static bearer tokens and basic auth are computed once.
//! - A token file is re-read every minute (client-go's cachingTokenSource
//!   period), immediately after a 401, and a stale token is kept if a
//!   re-read fails.
//! - Exec plugins ([`exec`]) run on demand, are cached until their
//!   `expirationTimestamp`, and re-run after a 401.
//!
//! Header values are marked sensitive so hyper and our logs never print them.

pub(crate) mod exec;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::HeaderValue;

use super::config::{Auth, Config};
use super::error::Error;
use super::tls::ClientCertStore;

/// How often a token file is re-read.
const TOKEN_FILE_PERIOD: Duration = Duration::from_secs(60);

/// Produces the credentials for each request.
pub(crate) struct Authenticator {
    kind: Kind,
}

enum Kind {
    None,
    Static(HeaderValue),
    TokenFile(TokenFile),
    Exec(exec::ExecAuth),
}

impl Authenticator {
    pub(crate) fn new(config: &Config, certs: Arc<ClientCertStore>) -> Result<Self, Error> {
        let kind = match &config.auth {
            Auth::None => Kind::None,
            Auth::Bearer(token) => Kind::Static(bearer(token.expose())?),
            Auth::Basic { username, password } => {
                let raw = format!("{username}:{}", password.expose());
                let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
                Kind::Static(sensitive(&format!("Basic {encoded}"))?)
            }
            Auth::TokenFile(path) => {
                Kind::TokenFile(TokenFile::new(path.clone(), TOKEN_FILE_PERIOD))
            }
            Auth::Exec(exec) => Kind::Exec(exec::ExecAuth::new(exec.clone(), config, certs)),
        };
        Ok(Self { kind })
    }

    /// The `Authorization` header for the next request, if any.
    pub(crate) async fn header(&self) -> Result<Option<HeaderValue>, Error> {
        match &self.kind {
            Kind::None => Ok(None),
            Kind::Static(h) => Ok(Some(h.clone())),
            Kind::TokenFile(tf) => tf.header().map(Some),
            Kind::Exec(exec) => exec.header().await,
        }
    }

    /// Called after a 401 for a request sent with `used`. Returns whether
    /// fresh credentials are now available, so a retry can help.
    pub(crate) async fn refresh_after_unauthorized(
        &self,
        used: Option<&HeaderValue>,
    ) -> Result<bool, Error> {
        match &self.kind {
            Kind::None | Kind::Static(_) => Ok(false),
            Kind::TokenFile(tf) => tf.refresh(used),
            Kind::Exec(exec) => exec.refresh(used).await,
        }
    }
}

fn sensitive(value: &str) -> Result<HeaderValue, Error> {
    let mut h = HeaderValue::from_str(value).map_err(|_| {
        Error::Auth("the credential contains characters not allowed in an HTTP header".to_owned())
    })?;
    h.set_sensitive(true);
    Ok(h)
}

pub(crate) fn bearer(token: &str) -> Result<HeaderValue, Error> {
    sensitive(&format!("Bearer {}", token.trim()))
}

/// A bearer token kept in a file that is rewritten as it rotates.
struct TokenFile {
    path: PathBuf,
    period: Duration,
    cached: Mutex<Option<(HeaderValue, Instant)>>,
}

impl TokenFile {
    fn new(path: PathBuf, period: Duration) -> Self {
        Self {
            path,
            period,
            cached: Mutex::new(None),
        }
    }

    fn read(&self) -> Result<HeaderValue, Error> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| {
            Error::Auth(format!(
                "cannot read token file {}: {e}",
                self.path.display()
            ))
        })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(Error::Auth(format!(
                "token file {} is empty",
                self.path.display()
            )));
        }
        bearer(token)
    }

    fn header(&self) -> Result<HeaderValue, Error> {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((h, at)) = cached.as_ref() {
            if at.elapsed() < self.period {
                return Ok(h.clone());
            }
        }
        match self.read() {
            Ok(h) => {
                *cached = Some((h.clone(), Instant::now()));
                Ok(h)
            }
            Err(e) => match cached.as_ref() {
                // Keep serving the last good token rather than failing every
                // request while the file is being replaced.
                Some((h, _)) => {
                    tracing::warn!(error = %e, "re-reading the token file failed; using the previous token");
                    Ok(h.clone())
                }
                None => Err(e),
            },
        }
    }

    fn refresh(&self, used: Option<&HeaderValue>) -> Result<bool, Error> {
        let fresh = self.read()?;
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        let changed = used != Some(&fresh);
        *cached = Some((fresh, Instant::now()));
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::config::SecretString;
    use crate::client::tls;

    fn auth_for(auth: Auth) -> Authenticator {
        let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.auth = auth;
        Authenticator::new(&config, Arc::new(ClientCertStore::new(tls::provider()))).unwrap()
    }

    #[tokio::test]
    async fn bearer_and_basic_headers() {
        let a = auth_for(Auth::Bearer(SecretString::new("abc")));
        let h = a.header().await.unwrap().unwrap();
        assert_eq!(h, "Bearer abc");
        assert!(h.is_sensitive());
        assert!(!a.refresh_after_unauthorized(Some(&h)).await.unwrap());

        let a = auth_for(Auth::Basic {
            username: "alice".into(),
            password: SecretString::new("s3cret"),
        });
        // base64("alice:s3cret")
        assert_eq!(a.header().await.unwrap().unwrap(), "Basic YWxpY2U6czNjcmV0");

        assert!(auth_for(Auth::None).header().await.unwrap().is_none());
    }

    #[test]
    fn token_file_is_reread_after_its_period_and_on_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "one\n").unwrap();
        let tf = TokenFile::new(path.clone(), Duration::from_millis(50));
        assert_eq!(tf.header().unwrap(), "Bearer one");

        std::fs::write(&path, "two").unwrap();
        // Within the period the cached token is used.
        assert_eq!(tf.header().unwrap(), "Bearer one");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(tf.header().unwrap(), "Bearer two");

        // After a 401 the file is read at once.
        std::fs::write(&path, "three").unwrap();
        let used = HeaderValue::from_static("Bearer two");
        assert!(tf.refresh(Some(&used)).unwrap());
        assert_eq!(tf.header().unwrap(), "Bearer three");
        // Nothing changed: a retry would not help.
        let used = HeaderValue::from_static("Bearer three");
        assert!(!tf.refresh(Some(&used)).unwrap());

        // A vanished file keeps the last good token.
        std::fs::remove_file(&path).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(tf.header().unwrap(), "Bearer three");
    }

    #[test]
    fn missing_token_file_is_an_auth_error() {
        let tf = TokenFile::new(PathBuf::from("/nonexistent/token"), TOKEN_FILE_PERIOD);
        let err = tf.header().unwrap_err().to_string();
        assert!(err.contains("/nonexistent/token"), "{err}");
    }
}
