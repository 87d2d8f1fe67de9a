package controller

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha512"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/metadata"
)

func alterScramReq(t *testing.T, c *Controller, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]kmsg.AlterUserSCRAMCredentialsResponseResult {
	t.Helper()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = dels, ups
	resp, err := c.AlterUserScramCredentials(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.AlterUserSCRAMCredentialsResponseResult{}
	for _, r := range resp.Results {
		out[r.User] = r
	}
	return out
}

func upsertion(t *testing.T, name string, mechanism int8, password string, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	t.Helper()
	salt := []byte("salt-of-" + name)
	salted, err := pbkdf2.Key(sha512.New, password, salt, int(iterations), sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: name, Mechanism: mechanism, Iterations: iterations, Salt: salt, SaltedPassword: salted}
}

// A credential upserted from a salted password authenticates a real SCRAM
// exchange (xdg-go's client against its server, fed the stored record);
// every refusal of ScramControlManager answers its own code.
func TestAlterUserScramCredentials(t *testing.T) {
	c, _, _ := newTestController(t, LatestMetadataVersion)
	res := alterScramReq(t, c, nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsertion(t, "alice", 2, "alice-secret", 4096),
		upsertion(t, "few", 2, "x", 4095),
		upsertion(t, "many", 2, "x", 16385),
		upsertion(t, "", 2, "x", 4096),
		upsertion(t, "mech", 3, "x", 4096),
		upsertion(t, "twice", 2, "x", 4096),
		upsertion(t, "twice", 2, "y", 4096),
	})
	want := map[string]int16{
		"alice": 0, "few": kerr.UnacceptableCredential.Code, "many": kerr.UnacceptableCredential.Code,
		"": kerr.UnacceptableCredential.Code, "mech": kerr.UnsupportedSaslMechanism.Code, "twice": kerr.DuplicateResource.Code,
	}
	for user, code := range want {
		if got := res[user]; got.ErrorCode != code {
			t.Errorf("user %q: code %d (%s), want %d", user, got.ErrorCode, deref(got.ErrorMessage), code)
		}
	}
	c.mu.RLock()
	rec, ok := c.image.Scram[metadata.ScramKey{Name: "alice", Mechanism: 2}]
	n := len(c.image.Scram)
	c.mu.RUnlock()
	if !ok || n != 1 {
		t.Fatalf("image holds %d credentials, alice's: %v", n, ok)
	}
	server, err := scram.SHA512.NewServer(func(user string) (scram.StoredCredentials, error) {
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(rec.Salt), Iters: int(rec.Iterations)}, StoredKey: rec.StoredKey, ServerKey: rec.ServerKey}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	client, err := scram.SHA512.NewClient("alice", "alice-secret", "")
	if err != nil {
		t.Fatal(err)
	}
	cc, sc := client.NewConversation(), server.NewConversation()
	msg, err := cc.Step("")
	for err == nil && !cc.Done() {
		if msg, err = sc.Step(msg); err != nil {
			break
		}
		msg, err = cc.Step(msg)
	}
	if err != nil || !sc.Valid() {
		t.Fatalf("SCRAM exchange with the stored credential: %v (server valid %v)", err, sc.Valid())
	}

	res = alterScramReq(t, c, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}, {Name: "bob", Mechanism: 2}}, nil)
	if res["alice"].ErrorCode != kerr.ResourceNotFound.Code || res["bob"].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("deleting absent credentials: %+v", res)
	}
	describe := func(users ...string) map[string]kmsg.DescribeUserSCRAMCredentialsResponseResult {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
		}
		out := map[string]kmsg.DescribeUserSCRAMCredentialsResponseResult{}
		for _, r := range c.DescribeUserScramCredentials(req).Results {
			out[r.User] = r
		}
		return out
	}
	if d := describe(); len(d) != 1 || len(d["alice"].CredentialInfos) != 1 || d["alice"].CredentialInfos[0].Iterations != 4096 {
		t.Errorf("describe all: %+v", d)
	}
	if d := describe("alice", "alice", "bob"); d["alice"].ErrorCode != kerr.DuplicateResource.Code || d["bob"].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("describe named: %+v", d)
	}
	res = alterScramReq(t, c, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 2}}, nil)
	if res["alice"].ErrorCode != 0 {
		t.Errorf("delete: %+v", res)
	}
	if d := describe(); len(d) != 0 {
		t.Errorf("after delete: %+v", d)
	}
}

// Below 3.5-IV2 the metadata.version has no SCRAM records.
func TestAlterUserScramCredentialsBeforeScramVersion(t *testing.T) {
	c, q, _ := newTestController(t, MVScram-1)
	res := alterScramReq(t, c, nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion(t, "alice", 2, "p", 4096)})
	if res["alice"].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("at metadata.version %d: %+v", MVScram-1, res)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.log {
		if _, ok := r.(*metadata.UserScramCredentialRecord); ok {
			t.Errorf("a credential was written at metadata.version %d", MVScram-1)
		}
	}
}
