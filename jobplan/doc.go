// Package jobplan holds a BatchJob's decisions, for its workflow to carry out: what the end
// of a run's application means for the job, and the run's record in the job's history. It
// is pure, so the workflow stays deterministic and the rules have table tests.
package jobplan
