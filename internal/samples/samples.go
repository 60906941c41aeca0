// Package samples holds the queue configurations the binary carries: the local platform's
// default queues (dev-queues.xml, open to everyone, with dev-yarn-site.xml spelling out the
// default settings), and the allocation file for two teams that `slotplane simulate` and
// `slotplane experiment` replay when given none (fair-scheduler.xml with yarn-site.xml).
// The last two are the files of examples/, where users read them; a test keeps the copies
// equal.
package samples

import "embed"

// Files are the allocation files and settings of this folder.
//
//go:embed *.xml
var Files embed.FS

// The names of the files.
const (
	DevQueues        = "dev-queues.xml"
	DevSettings      = "dev-yarn-site.xml"
	TwoTeams         = "fair-scheduler.xml"
	TwoTeamsSettings = "yarn-site.xml"
)
