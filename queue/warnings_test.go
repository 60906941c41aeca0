package queue

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Root's ACLs are "*" unless the file sets them, and administering implies submitting: only a
// file that sets both of root's ACLs to something narrower restricts anyone, and the warning
// says which of root's ACLs to set. Each case is also checked against Allowed, so the
// warning and the access checks cannot drift apart.
func TestWarnings_RootACLsThatLeaveEveryQueueOpen(t *testing.T) {
	const child = `<queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue>`
	rootWith := func(acls string) string {
		return `<allocations><queue name="root">` + acls + child + `</queue></allocations>`
	}
	cases := map[string]struct {
		file string
		// want are the phrases the one warning must hold; none means no warning.
		want []string
		// mallory is a user no ACL names: may she submit to, and administer, root.secure?
		submits, administers bool
	}{
		"no ACLs": {
			file: `<allocations><queue name="open"/></allocations>`,
			want: []string{
				"every user may submit to and administer every queue",
				`root's aclSubmitApps is not set, which means "*"`,
				`root's aclAdministerApps is not set, which means "*"`,
				"set both on root",
			},
			submits: true, administers: true,
		},
		"only submit set": {
			file: rootWith(`<aclSubmitApps>admin</aclSubmitApps>`),
			want: []string{
				"every user may submit to and administer every queue",
				`root's aclAdministerApps is not set, which means "*"`,
				"whoever may administer a queue may submit to it",
				"set root's aclAdministerApps too",
				"The ACLs set on root.secure restrict nobody",
			},
			submits: true, administers: true,
		},
		"only administer set": {
			file: rootWith(`<aclAdministerApps>admin</aclAdministerApps>`),
			want: []string{
				"every user may submit to every queue",
				`root's aclSubmitApps is not set, which means "*"`,
				"set root's aclSubmitApps",
				"The ACLs set on root.secure restrict nobody",
			},
			submits: true, administers: false,
		},
		"both set": {
			file:    rootWith(`<aclSubmitApps>admin</aclSubmitApps><aclAdministerApps>admin</aclAdministerApps>`),
			submits: false, administers: false,
		},
		"both set to nobody": {
			file:    rootWith(`<aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>`),
			submits: false, administers: false,
		},
		"both set to * explicitly": {
			file: rootWith(`<aclSubmitApps>*</aclSubmitApps><aclAdministerApps>*</aclAdministerApps>`),
			want: []string{
				"every user may submit to and administer every queue",
				`root's aclSubmitApps is "*" (everybody)`,
				`root's aclAdministerApps is "*" (everybody)`,
				"set both on root",
				"The ACLs set on root.secure restrict nobody",
			},
			submits: true, administers: true,
		},
		"a child's ACL set while root is open": {
			file: `<allocations>
  <queue name="analytics"><aclSubmitApps> analysts</aclSubmitApps>
    <queue name="daily"><aclAdministerApps>ops</aclAdministerApps></queue>
  </queue>
  <queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue>
  <queue name="public"><aclSubmitApps>*</aclSubmitApps></queue>
</allocations>`,
			want: []string{
				"every user may submit to and administer every queue",
				"The ACLs set on root.analytics, root.analytics.daily, root.secure restrict nobody while root's stay open.",
			},
			submits: true, administers: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAllocations([]byte(tc.file))
			require.NoError(t, err)
			got := a.Warnings()
			if len(tc.want) == 0 {
				require.Empty(t, got)
			} else {
				require.Len(t, got, 1, "%q", got)
				for _, phrase := range tc.want {
					require.Contains(t, got[0], phrase)
				}
				require.NotContains(t, got[0], "public", "an ACL of * narrows nothing, so it is not named")
				require.True(t, strings.HasSuffix(got[0], "."), "whole sentences: %q", got[0])
			}
			queue := "root.secure"
			if a.Queue(queue) == nil {
				queue = "root.open"
			}
			require.Equal(t, tc.submits, a.Allowed(Submit, queue, "mallory", nil), "mallory submits to %s", queue)
			require.Equal(t, tc.administers, a.Allowed(Administer, queue, "mallory", nil), "mallory administers %s", queue)
			require.Equal(t, tc.submits, len(got) > 0, "a warning exactly when anybody may submit anywhere")
		})
	}
}
