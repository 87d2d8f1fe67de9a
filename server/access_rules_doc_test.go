package server

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/authz"
)

// accessTable renders the access rules the handler files register
// (regKey) for docs/compatibility.md: every served key with what it
// checks.
func accessTable() string {
	var keys []int16
	for k := range handlers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("| Key | API | Checked (ControllerApis) | Refused with |\n|---|---|---|---|\n")
	for _, k := range keys {
		r := handlers[k].access
		check, code := "nothing (every client)", "-"
		switch {
		case r.cluster != authz.OpUnknown:
			check, code = fmt.Sprintf("%s on CLUSTER:kafka-cluster", r.cluster), "CLUSTER_AUTHORIZATION_FAILED"
		case r.items != "":
			check, code = r.items, "per item, the failed resource's *_AUTHORIZATION_FAILED"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", k, r.name, check, code)
	}
	return b.String()
}

// docs/compatibility.md holds the table of the registered access rules, so
// the docs say what the code checks.
func TestAccessTableInDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := accessTable(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/compatibility.md lacks the authorization table; put this in its \"Authorization\" section:\n%s", want)
	}
}
