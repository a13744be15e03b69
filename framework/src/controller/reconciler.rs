//! The reconcile function as the workers call it: the user's function, its
//! error policy and the controller's [`Context`], behind the object-safe
//! [`ErasedReconciler`], which also sorts a failure into terminal or
//! retried (see [`Action`] for what follows each).

use std::error::Error as StdError;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::action::Action;
use super::context::Context;
use crate::reconcile::is_terminal;

/// A reconcile function with its context and error policy, type-erased.
pub(crate) trait ErasedReconciler<K>: Send + Sync {
    fn reconcile(&self, obj: Arc<K>) -> BoxFuture<'static, Result<Action, Failure>>;
}

/// A failed reconcile: the error, whether it is terminal, and what the
/// error policy wants next.
pub(crate) struct Failure {
    pub(crate) error: Box<dyn StdError + Send + Sync>,
    pub(crate) terminal: bool,
    pub(crate) then: Action,
}

/// The policy without one: retry with the rate limiter.
pub(crate) fn default_error_policy<K, E, D>(_: Arc<K>, _: &E, _: Arc<Context<D>>) -> Action {
    Action::requeue()
}

/// Ties a reconcile function's argument, future and error types to
/// [`FnReconciler`] without owning any.
type Signature<K, Fut, E> = fn(Arc<K>) -> (Fut, E);

/// A reconcile function, its error policy and its context, behind the
/// object-safe [`ErasedReconciler`].
pub(crate) struct FnReconciler<K, F, Fut, E, P, D> {
    reconcile: F,
    error_policy: Arc<P>,
    context: Arc<Context<D>>,
    _types: PhantomData<Signature<K, Fut, E>>,
}

impl<K, F, Fut, E, P, D> FnReconciler<K, F, Fut, E, P, D> {
    pub(crate) fn new(reconcile: F, error_policy: P, context: Arc<Context<D>>) -> Self {
        Self {
            reconcile,
            error_policy: Arc::new(error_policy),
            context,
            _types: PhantomData,
        }
    }
}

impl<K, F, Fut, E, P, D> ErasedReconciler<K> for FnReconciler<K, F, Fut, E, P, D>
where
    K: Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: StdError + Send + Sync + 'static,
    P: Fn(Arc<K>, &E, Arc<Context<D>>) -> Action + Send + Sync + 'static,
    D: Send + Sync + 'static,
{
    fn reconcile(&self, obj: Arc<K>) -> BoxFuture<'static, Result<Action, Failure>> {
        let run = (self.reconcile)(Arc::clone(&obj), Arc::clone(&self.context));
        let policy = Arc::clone(&self.error_policy);
        let context = Arc::clone(&self.context);
        Box::pin(async move {
            match run.await {
                Ok(action) => Ok(action),
                Err(error) => {
                    let terminal = is_terminal(&error);
                    let then = if terminal {
                        Action::done()
                    } else {
                        policy(obj, &error, context)
                    };
                    Err(Failure {
                        error: Box::new(error),
                        terminal,
                        then,
                    })
                }
            }
        })
    }
}
