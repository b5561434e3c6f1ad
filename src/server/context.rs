//! What a handler is given: the state (each owner by its narrow API), the
//! connection whose message it handles (`Caller`), and where to put what
//! should be sent (`Effects`, delivered by the dispatcher once the handler
//! returned, before its answer). Never the dispatcher itself.

use super::clients::Caller;
use super::effects::Effects;
use super::jobs::JobSender;
use super::state::State;

pub(crate) struct Context<'a> {
    pub state: &'a mut State,
    pub caller: Caller<'a>,
    pub effects: Effects,
    /// Where background work a handler starts reports back (an import).
    pub results: &'a JobSender,
}
