package pi

import (
	"slices"
	"testing"
)

// TestPublicVerbs: every verb needs a login unless it is on this list, so
// a new command is protected unless someone decides otherwise here too.
func TestPublicVerbs(t *testing.T) {
	for table, want := range map[string][]string{
		"command": {"ABOR", "ADAT", "AUTH", "FEAT", "HELP", "NOOP", "PASS", "QUIT", "SITE", "USER"},
		"SITE":    {"CLIENTINFO", "HELP", "TASKID", "VERSION"},
	} {
		tab := commandTable
		if table == "SITE" {
			tab = siteTable
		}
		var public []string
		for verb, spec := range tab {
			if spec.public {
				public = append(public, verb)
			}
		}
		slices.Sort(public)
		if !slices.Equal(public, want) {
			t.Errorf("%s table: public verbs %v, want %v", table, public, want)
		}
	}
}
