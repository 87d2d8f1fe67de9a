package controller

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// SCRAM users, as Apache's ScramControlManager writes them and its
// ScramImage describes them. A request names each user at most once, in a
// deletion or an upsertion; the client sends the salted password, which
// the controller turns into StoredKey and ServerKey (RFC 5802) so that the
// password's equivalent never reaches the log.

// Iteration bounds: both mechanisms' minimum (ScramMechanism.minIterations)
// and ScramControlManager.MAX_ITERATIONS.
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

// scramHash is the hash of a SCRAM mechanism type (1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512), nil for any other.
func scramHash(mechanism int8) func() hash.Hash {
	switch mechanism {
	case 1:
		return sha256.New
	case 2:
		return sha512.New
	}
	return nil
}

// ScramKeys turns a salted password into RFC 5802's StoredKey
// (H(HMAC(salted, "Client Key"))) and ServerKey (HMAC(salted, "Server
// Key")).
func ScramKeys(h func() hash.Hash, salted []byte) (storedKey, serverKey []byte) {
	mac := func(msg string) []byte {
		m := hmac.New(h, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	sum := h()
	sum.Write(mac("Client Key"))
	return sum.Sum(nil), mac("Server Key")
}

// checkScramName is validateScramUsernameAndMechanism.
func checkScramName(name string, mechanism int8) *Error {
	if name == "" {
		return apiErr(kerr.UnacceptableCredential.Code, "Username must not be empty")
	}
	if scramHash(mechanism) == nil {
		return apiErr(kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
	}
	return nil
}

// AlterUserScramCredentials deletes and upserts SCRAM credentials
// (ScramControlManager.alterCredentials): the valid changes are written
// and answered NONE, the others answered with their error.
func (c *Core) AlterUserScramCredentials(now time.Time, req *kmsg.AlterUserSCRAMCredentialsRequest, answer func(*kmsg.AlterUserSCRAMCredentialsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		var recs []metadata.Record
		recs, resp.Results = alterScram(im, req)
		return recs, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

func alterScram(im *metadata.Image, req *kmsg.AlterUserSCRAMCredentialsRequest) ([]metadata.Record, []kmsg.AlterUserSCRAMCredentialsResponseResult) {
	supported := metadataVersion(im) >= MVScram
	deletions := map[string]kmsg.AlterUserSCRAMCredentialsRequestDeletion{}
	upserts := map[string]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{}
	errs := map[string]*Error{}
	duplicate := apiErr(kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
	unsupported := apiErr(kerr.UnsupportedVersion.Code, "The current metadata.version does not support SCRAM")
	for _, d := range req.Deletions {
		if _, failed := errs[d.Name]; failed {
			continue
		}
		if _, dup := deletions[d.Name]; dup {
			delete(deletions, d.Name)
			errs[d.Name] = duplicate
			continue
		}
		err := checkScramName(d.Name, d.Mechanism)
		if !supported {
			err = unsupported
		} else if _, has := im.Scram[metadata.ScramKey{Name: d.Name, Mechanism: d.Mechanism}]; err == nil && !has {
			err = apiErr(kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
		}
		if err != nil {
			errs[d.Name] = err
		} else {
			deletions[d.Name] = d
		}
	}
	for _, u := range req.Upsertions {
		if _, failed := errs[u.Name]; failed {
			continue
		}
		_, dupDel := deletions[u.Name]
		_, dupUp := upserts[u.Name]
		if dupDel || dupUp {
			delete(deletions, u.Name)
			delete(upserts, u.Name)
			errs[u.Name] = duplicate
			continue
		}
		err := checkScramName(u.Name, u.Mechanism)
		switch {
		case !supported:
			err = unsupported
		case err != nil:
		case u.Iterations < scramMinIterations:
			err = apiErr(kerr.UnacceptableCredential.Code, "Too few iterations")
		case u.Iterations > scramMaxIterations:
			err = apiErr(kerr.UnacceptableCredential.Code, "Too many iterations")
		}
		if err != nil {
			errs[u.Name] = err
		} else {
			upserts[u.Name] = u
		}
	}
	var recs []metadata.Record
	var results []kmsg.AlterUserSCRAMCredentialsResponseResult
	ok := func(name string) {
		results = append(results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name})
	}
	for _, name := range slices.Sorted(maps.Keys(deletions)) {
		d := deletions[name]
		recs = append(recs, &metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		ok(name)
	}
	for _, name := range slices.Sorted(maps.Keys(upserts)) {
		u := upserts[name]
		stored, server := ScramKeys(scramHash(u.Mechanism), u.SaltedPassword)
		recs = append(recs, &metadata.UserScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism, Salt: u.Salt, StoredKey: stored, ServerKey: server, Iterations: u.Iterations})
		ok(name)
	}
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		e := errs[name]
		results = append(results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name, ErrorCode: e.Code, ErrorMessage: &e.Message})
	}
	return recs, results
}

// DescribeUserScramCredentials answers from the committed image as
// Apache's ScramImage.describe does: every user when none is named, a user
// named twice DUPLICATE_RESOURCE, one without credentials
// RESOURCE_NOT_FOUND. Apache's controller does not serve this key (brokers
// answer it); kraftd does, for a client that asks the controller directly.
func (c *Controller) DescribeUserScramCredentials(req *kmsg.DescribeUserSCRAMCredentialsRequest) *kmsg.DescribeUserSCRAMCredentialsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	c.mu.RLock()
	defer c.mu.RUnlock()
	creds := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for k, rec := range c.image.Scram {
		creds[k.Name] = append(creds[k.Name], kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{Mechanism: k.Mechanism, Iterations: rec.Iterations})
	}
	named := map[string]bool{} // user -> named twice
	if len(req.Users) == 0 {
		for name := range creds {
			named[name] = false
		}
	}
	for _, u := range req.Users {
		_, twice := named[u.Name]
		named[u.Name] = twice
	}
	for _, name := range slices.Sorted(maps.Keys(named)) {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		infos := creds[name]
		switch {
		case named[name]:
			res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, scramMsg("Cannot describe SCRAM credentials for the same user twice in a single request: "+name)
		case len(infos) == 0:
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, scramMsg("Attempt to describe a user credential that does not exist: "+name)
		default:
			slices.SortFunc(infos, func(a, b kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo) int {
				return cmp.Compare(a.Mechanism, b.Mechanism)
			})
			res.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// AlterUserScramCredentials: see Core.AlterUserScramCredentials.
func (c *Controller) AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.AlterUserSCRAMCredentialsResponse, error)) {
		core.AlterUserScramCredentials(now, req, answer)
	})
}

func scramMsg(s string) *string { return &s }
