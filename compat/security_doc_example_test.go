package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kraftd/kraftd/internal/testpki"
)

// The secured three-node example of docs/security.md (SASL_SSL, SCRAM-SHA-512 from
// format --add-scram, mutual TLS, re-authentication) runs as written: its
// server.properties, with only the ports, directories and certificate
// paths replaced by the test's, and its format arguments start three
// kraftd controllers that elect a leader; the harness reaches them with a
// client certificate and the admin's SCRAM credentials, and
// kafka-metadata-quorum 4.1.2 and 4.4.0 describe them with the page's
// client.properties, and again after the keystore is rotated on disk.
func TestSecurityDocExample(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(RepoRoot(t), "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	server := docBlock(t, "docs/security.md", string(page), "secure-server.properties")
	format := docBlock(t, "docs/security.md", string(page), "secure-format")
	client := docBlock(t, "docs/security.md", string(page), "secure-client.properties")

	k := NewTestPKI(t)
	paths := strings.NewReplacer(
		"/etc/kraftd/controller-1.keystore.pem", k.Files.KeystorePEM,
		"/etc/kraftd/admin.keystore.pem", k.ClientKS,
		"/etc/kraftd/ca.pem", k.Files.TruststorePEM)
	ports := FreePorts(t, 3)
	var pairs []string
	for i, p := range ports {
		pairs = append(pairs, fmt.Sprintf("127.0.0.1:%d", 9093+i), Addr(p))
	}
	addrs := strings.NewReplacer(pairs...)
	var scramArgs []string
	for _, m := range regexp.MustCompile(`--add-scram '([^']*)'`).FindAllStringSubmatch(format, -1) {
		scramArgs = append(scramArgs, "--add-scram", m[1])
	}
	admin := regexp.MustCompile(`name=admin,password=([^\]]*)\]`).FindStringSubmatch(format)
	if len(scramArgs) != 4 || admin == nil {
		t.Fatalf("the page's format command has no controller and admin credentials:\n%s", format)
	}

	clusterID := NewUUID()
	base := t.TempDir()
	for i := range ports {
		id := i + 1
		props := addrs.Replace(paths.Replace(server))
		props = strings.Replace(props, "node.id=1", fmt.Sprintf("node.id=%d", id), 1)
		props = strings.Replace(props, "listeners=CONTROLLER://"+Addr(ports[0]), "listeners=CONTROLLER://"+Addr(ports[i]), 1)
		props = strings.Replace(props, "metadata.log.dir=/var/lib/kraftd/1", "metadata.log.dir="+filepath.Join(base, fmt.Sprint(id)), 1)
		conf := filepath.Join(base, fmt.Sprintf("server-%d.properties", id))
		writeFile(t, conf, []byte(props))
		KraftdFormat(t, int32(id), conf, clusterID, scramArgs...)
		StartKraftd(t, fmt.Sprintf("kraftd-node%d", id), "--log-format", "json", "--log-level", "debug", "start", "--config", conf)
	}
	var all []string
	for _, p := range ports {
		all = append(all, Addr(p))
		UseTLS(t, Addr(p), k.ClientConfig())
		UseSASL(t, Addr(p), scram.Auth{User: "admin", Pass: admin[1]}.AsSha512Mechanism())
	}
	st := WaitLeader(t, all, nil)
	t.Logf("leader %d, epoch %d", st.LeaderID, st.LeaderEpoch)

	ReserveJVMs(t, 1)
	clientProps := filepath.Join(base, "client.properties")
	writeFile(t, clientProps, []byte(paths.Replace(client)))
	for _, v := range Versions {
		status, err := MetadataQuorum(t, v, "--bootstrap-controller", all[0], "--command-config", clientProps, "describe", "--status")
		if err != nil {
			t.Fatal(err)
		}
		if got := statusLines(status); got["ClusterId"] != clusterID {
			t.Errorf("%s: ClusterId %q, want %q:\n%s", v, got["ClusterId"], clusterID, status)
		}
	}

	// Rotation: the truststores learn a new CA, then the keystore file is
	// replaced by a certificate that CA signed (same subject and names). A
	// tool that trusts only the new CA connects, so the running
	// controllers served the replaced keystore to its connection.
	next := NewTestPKI(t)
	if err := testpki.WriteAtomic(k.Files.TruststorePEM, append(k.CA.CertPEM(), next.CA.CertPEM()...)); err != nil {
		t.Fatal(err)
	}
	if err := testpki.WriteAtomic(k.Files.KeystorePEM, next.Controller.KeystorePEM()); err != nil {
		t.Fatal(err)
	}
	onlyNewCA := filepath.Join(base, "client-new-ca.properties")
	writeFile(t, onlyNewCA, []byte(strings.NewReplacer(
		"/etc/kraftd/admin.keystore.pem", k.ClientKS,
		"/etc/kraftd/ca.pem", next.Files.TruststorePEM).Replace(client)))
	for _, v := range Versions {
		if _, err := MetadataQuorum(t, v, "--bootstrap-controller", all[1], "--command-config", onlyNewCA, "describe", "--status"); err != nil {
			t.Fatalf("%s, trusting only the new CA after the keystore was replaced: %v", v, err)
		}
	}
}

// docBlock is the fenced block after the `<!-- example: name ... -->`
// marker of the page (file names it in failures); the fence may name a
// language.
func docBlock(t *testing.T, file, page, name string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, "<!-- example: "+name)
	if !ok {
		t.Fatalf("%s has no example %q", file, name)
	}
	_, fence, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("%s example %q has no code block", file, name)
	}
	_, block, ok := strings.Cut(fence, "\n")
	if !ok {
		t.Fatalf("%s example %q has no code block", file, name)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s example %q is not closed", file, name)
	}
	return block
}
