package queue

import "strings"

// ACL is an aclSubmitApps or aclAdministerApps value: "user1,user2 group1,group2". A space
// separates the users from the groups, so a value that starts with a space names groups
// only; "*" admits everybody.
type ACL struct {
	All    bool
	Users  []string
	Groups []string
}

// ParseACL reads an ACL value. It never fails: an empty value admits nobody.
func ParseACL(s string) ACL {
	if strings.TrimSpace(s) == "*" {
		return ACL{All: true}
	}
	users, groups, _ := strings.Cut(s, " ")
	return ACL{Users: splitNames(users), Groups: splitNames(groups)}
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Admits reports whether the user, or one of its groups, is on the list.
func (a ACL) Admits(user string, groups []string) bool {
	if a.All {
		return true
	}
	for _, u := range a.Users {
		if u == user {
			return true
		}
	}
	for _, g := range a.Groups {
		for _, mine := range groups {
			if g == mine {
				return true
			}
		}
	}
	return false
}

// Action is what a queue ACL guards.
type Action int

// The queue actions.
const (
	Submit Action = iota
	Administer
)

// Allowed reports whether user (with groups) may act on the queue at path: the ACL of the
// queue or of any ancestor must admit them. Root's ACLs are "*" unless the file sets them;
// another queue without an ACL admits nobody by itself. Administering implies submitting.
// A queue the file does not configure is judged by its configured ancestors.
func (a *Allocations) Allowed(action Action, path, user string, groups []string) bool {
	if path != "root" && !strings.HasPrefix(path, "root.") {
		path = "root." + path
	}
	q := a.Root
	for {
		if q.admits(action, user, groups) {
			return true
		}
		var next *QueueConfig
		for _, c := range q.Children {
			if path == c.Path || strings.HasPrefix(path, c.Path+".") {
				next = c
				break
			}
		}
		if next == nil {
			return false
		}
		q = next
	}
}

func (q *QueueConfig) admits(action Action, user string, groups []string) bool {
	acls := []*ACL{q.AdministerACL}
	if action == Submit {
		acls = append(acls, q.SubmitACL)
	}
	for _, acl := range acls {
		if acl == nil {
			if q.Path == "root" {
				return true // root's default "*"
			}
			continue
		}
		if acl.Admits(user, groups) {
			return true
		}
	}
	return false
}
