//! What a release reports while it runs: typed events through the caller's callback (the
//! binary draws progress lines, a bar or JSON lines from them).

use crate::step::{State, Step};

/// One event of a release.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// Staging is done (the bundle and chart are generated, validated, built and packaged in
    /// memory) and the release has this many steps, each reported once as started and
    /// finished, or skipped.
    Planned {
        /// The number of steps.
        steps: usize,
    },
    /// A step starts running.
    Started(&'a Step),
    /// A step finished (ran).
    Finished(&'a Step),
    /// A step is recognised as done (or, in a dry run, is only planned) and does not run.
    Skipped(&'a Step),
    /// A note for people (a generated key, validation warnings).
    Note(&'a str),
    /// Something the user should see even when quiet (the generated key's location).
    Important(&'a str),
    /// Validation findings below error level on the staged bundle (it is released).
    Findings(&'a opship_validate::BundleReport),
}

impl Event<'_> {
    /// The event as one JSON object: `event` is `plan` (with the number of `steps`; `opship
    /// release --events jsonl` leaves it out, its lines are step events and notes), `start`,
    /// `finish`, `skip`, `note` or `findings`; step events carry the step's id, status,
    /// digest and `opship` command line.
    pub fn to_json(&self) -> serde_json::Value {
        let step = |name: &str, s: &Step| {
            serde_json::json!({
                "event": name,
                "step": s.id,
                "description": s.description,
                "status": s.state.word(),
                "reason": match &s.state { State::Done(r) => Some(r.as_str()), _ => None },
                "digest": s.digest,
                "command": s.command,
            })
        };
        match self {
            Event::Planned { steps } => serde_json::json!({"event": "plan", "steps": steps}),
            Event::Started(s) => step("start", s),
            Event::Finished(s) => step("finish", s),
            Event::Skipped(s) => step("skip", s),
            Event::Note(n) | Event::Important(n) => {
                serde_json::json!({"event": "note", "message": n})
            }
            Event::Findings(r) => serde_json::json!({
                "event": "findings",
                "bundle": opship_core::paths::show(&r.path).to_string(),
                "findings": r.findings.len(),
            }),
        }
    }
}
