// Package schedplan holds a Scheduling's decisions, for its workflow to carry out: its
// queue of jobs as the workflow tracks them, what a grant of Admission or a job's report
// does to them, which extensions it takes, and what of its status it writes and when. It is
// pure (times come in as arguments), so the workflow stays deterministic and the rules have
// table tests.
package schedplan
