//! The runtime's side of the in-process server: a `Client` for it. Kept apart
//! from the server proper, which never uses the client it tests.

use super::ApiServer;
use crate::client::{Client, Error};

impl ApiServer {
    /// A `Client` that trusts this server's CA and sends its token.
    pub fn client(&self) -> Result<Client, Error> {
        Client::try_from(self.config())
    }
}
