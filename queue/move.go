package queue

import "fmt"

// Move asks to move a job to another queue, on behalf of By (with ByGroups). By must be the
// job's user or may administer the job's queue (aclAdministerApps); the job's user must be
// allowed to submit to the target, a leaf; a running job must fit the target's and its new
// ancestors' maxRunningApps and maxResources. A waiting job keeps its place in submission
// order.
type Move struct {
	Scheduling string
	Job        string
	Queue      string
	By         string
	ByGroups   []string
}

// Moved says where a moved job was and is now (the full queue paths).
type Moved struct {
	Job  string
	From string
	To   string
}

// The kinds of a refused move, for callers that answer people.
const (
	MoveNotReady  = "MoveNotReady"
	MoveNotFound  = "MoveNotFound"
	MoveForbidden = "MoveForbidden"
	MoveInvalid   = "MoveInvalid"
)

// MoveError is a refused move: Kind is one of the Move* kinds.
type MoveError struct {
	Kind string
	Msg  string
}

func (e *MoveError) Error() string { return e.Msg }

// CheckMove says whether m may be done, and which entry it moves. It changes nothing.
func (a *Admitter) CheckMove(m Move) (*Entry, bool, error) {
	a.compact()
	e, running, _, err := a.actedOn("move", m.Scheduling, m.Job, m.By, m.ByGroups)
	if err != nil {
		return nil, false, err
	}
	alloc := a.st.Config.Allocations
	c := Cluster{Total: a.st.Total}
	for i := range a.st.Running {
		c.Apps = append(c.Apps, a.appOf(&a.st.Running[i], true))
	}
	if err := a.tree.CanMove(c, a.appOf(e, running), m.Queue); err != nil {
		return nil, false, &MoveError{MoveInvalid, fmt.Sprintf("job %s cannot move to %s: %v", m.Job, m.Queue, err)}
	}
	if to := a.tree.Queue(m.Queue).Path; !alloc.Allowed(Submit, to, e.Request.User, e.Request.Groups) {
		return nil, false, &MoveError{MoveForbidden, fmt.Sprintf("job %s cannot move to %s: its user %q may not submit there (aclSubmitApps)", m.Job, to, e.Request.User)}
	}
	return e, running, nil
}

// actedOn finds the entry that an action of by (move or kill, what) on a job of a Scheduling
// acts on, the newest of the job there (keys of an earlier run may linger), and checks that
// by may act on it: the job's user, or whoever may administer its queue (aclAdministerApps).
// running says the entry holds slots; as names the right. It changes nothing.
func (a *Admitter) actedOn(what, scheduling, job, by string, groups []string) (e *Entry, running bool, as string, err error) {
	if a.st.Total.IsZero() {
		return nil, false, "", &MoveError{MoveNotReady, "the queues are not ready yet (no decision on the test bed yet); try again"}
	}
	if by == "" {
		return nil, false, "", &MoveError{MoveForbidden, fmt.Sprintf("the %s names nobody asking for it (By)", what)}
	}
	for i := range a.st.Running {
		if x := &a.st.Running[i]; x.Request.Scheduling == scheduling && x.Request.Job == job {
			e, running = x, true
		}
	}
	for i := range a.st.Waiting {
		if x := &a.st.Waiting[i]; x.Request.Scheduling == scheduling && x.Request.Job == job {
			e, running = x, false
		}
	}
	switch {
	case e == nil:
		return nil, false, "", &MoveError{MoveNotFound, fmt.Sprintf("job %s of scheduling %s is not in the queues (not submitted yet, or ended)", job, scheduling)}
	case by == e.Request.User:
		return e, running, "the job's user", nil
	case a.st.Config.Allocations.Allowed(Administer, e.Queue, by, groups):
		return e, running, "an administrator of " + e.Queue, nil
	}
	return nil, false, "", &MoveError{MoveForbidden, fmt.Sprintf("user %q may not %s job %s: it is neither the job's user (%q) nor may it administer queue %s (aclAdministerApps)",
		by, what, job, e.Request.User, e.Queue)}
}

// Move moves a job to another queue, after CheckMove.
func (a *Admitter) Move(m Move) (Moved, error) {
	e, _, err := a.CheckMove(m)
	if err != nil {
		return Moved{}, err
	}
	res := Moved{Job: m.Job, From: e.Queue, To: a.tree.Queue(m.Queue).Path}
	e.Queue, a.pic = res.To, nil
	if a.st.Reserved != nil && *a.st.Reserved == e.Request.JobKey {
		a.st.Reserved = nil
	}
	return res, nil
}
