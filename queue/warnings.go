package queue

import (
	"fmt"
	"strings"
)

// Warnings lists what in the allocation file does not do what it seems to, in words for the
// people who wrote it. It is empty when nothing needs saying.
//
// Today it says one thing: that root's ACLs leave every queue open. A queue admits whoever
// its ancestors admit (Allowed), root's aclSubmitApps and aclAdministerApps are "*" when the
// file does not set them, and whoever may administer a queue may submit to it. So a child's
// ACL narrows nothing unless root's two ACLs are both narrower than "*", and a file that only
// sets its children's ACLs, or only one of root's, restricts nobody.
func (a *Allocations) Warnings() []string {
	root := a.Root
	submitOpen, adminOpen := openACL(root.SubmitACL), openACL(root.AdministerACL)
	if !submitOpen && !adminOpen {
		return nil
	}
	var w string
	switch {
	case submitOpen && adminOpen:
		w = fmt.Sprintf("every user may submit to and administer every queue: %s, and %s. "+
			"A queue admits whoever its parents admit, so no queue's own ACL narrows that. "+
			"To restrict access, set both on root (a single space admits nobody) and name each queue's users in its own aclSubmitApps and aclAdministerApps.",
			rootACL("aclSubmitApps", root.SubmitACL), rootACL("aclAdministerApps", root.AdministerACL))
	case adminOpen:
		w = fmt.Sprintf("every user may submit to and administer every queue: %s, and whoever may administer a queue may submit to it, "+
			"so root's narrower aclSubmitApps holds nobody back and no queue's own ACL narrows anything. "+
			"To restrict access, set root's aclAdministerApps too (a single space admits nobody).",
			rootACL("aclAdministerApps", root.AdministerACL))
	default:
		w = fmt.Sprintf("every user may submit to every queue: %s. "+
			"A queue admits whoever its parents admit, so no queue's own aclSubmitApps narrows that. "+
			"To restrict submitting, set root's aclSubmitApps (a single space admits nobody) and name each queue's users in its own.",
			rootACL("aclSubmitApps", root.SubmitACL))
	}
	if idle := overruled(root, adminOpen); len(idle) > 0 {
		w += fmt.Sprintf(" The ACLs set on %s restrict nobody while root's stay open.", strings.Join(idle, ", "))
	}
	return []string{w}
}

// openACL: the ACL admits everybody, or is unset (which, on root, means "*").
func openACL(acl *ACL) bool { return acl == nil || acl.All }

// rootACL describes one of root's open ACLs.
func rootACL(name string, acl *ACL) string {
	if acl == nil {
		return fmt.Sprintf(`root's %s is not set, which means "*" (everybody)`, name)
	}
	return fmt.Sprintf(`root's %s is "*" (everybody)`, name)
}

// overruled lists, in file order, the queues under root whose own ACLs look like
// restrictions and are not: their aclSubmitApps while root lets everybody submit, and their
// aclAdministerApps too when root lets everybody administer.
func overruled(root *QueueConfig, adminOpen bool) []string {
	var out []string
	var walk func(q *QueueConfig)
	walk = func(q *QueueConfig) {
		narrows := func(acl *ACL) bool { return acl != nil && !acl.All }
		if narrows(q.SubmitACL) || (adminOpen && narrows(q.AdministerACL)) {
			out = append(out, q.Path)
		}
		for _, c := range q.Children {
			walk(c)
		}
	}
	for _, c := range root.Children {
		walk(c)
	}
	return out
}
