package controller

import (
	"crypto/sha256"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

// The transcripts' admin operations: configs, features, ACLs, quotas,
// SCRAM credentials and delegation tokens. Changes are given in line
// order as <op>.<key>[=<value>], op one of set, delete, append, subtract.
func init() {
	for name, op := range map[string]txOp{
		// incremental-alter-configs topic=<name>|broker=<id or empty>|
		// group=<name>|client-metrics=<name> <changes> [validate]
		"incremental-alter-configs": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.ValidateOnly = c.has("validate")
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			for _, kind := range []struct {
				key string
				typ kmsg.ConfigResourceType
			}{{"topic", kmsg.ConfigResourceTypeTopic}, {"broker", kmsg.ConfigResourceTypeBroker},
				{"group", kmsg.ConfigResourceTypeGroupConfig}, {"client-metrics", kmsg.ConfigResourceTypeClientMetrics}} {
				if name, ok := c.kv[kind.key]; ok {
					res.ResourceType, res.ResourceName = kind.typ, name
				}
			}
			for _, ch := range tr.changes(c) {
				res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: ch.key, Op: kmsg.IncrementalAlterConfigOp(ch.op), Value: ch.value})
			}
			req.Resources = append(req.Resources, res)
			tr.core.IncrementalAlterConfigs(tr.now, req, func(r *kmsg.IncrementalAlterConfigsResponse, err error) { answer(r, err) })
		},
		// update-features <feature>=<level>... [type=upgrade|safe|unsafe]
		// [validate]
		"update-features": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.SetVersion(1)
			req.ValidateOnly = c.has("validate")
			typ := map[string]int8{"upgrade": 1, "safe": 2, "unsafe": 3}[c.arg("type", "upgrade")]
			for _, k := range c.keys {
				if k != "type" && k != "at" {
					req.FeatureUpdates = append(req.FeatureUpdates, kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: k, MaxVersionLevel: int16(tr.int(c, k, 0)), UpgradeType: typ})
				}
			}
			tr.core.UpdateFeatures(tr.now, req, func(r *kmsg.UpdateFeaturesResponse, err error) { answer(r, err) })
		},
		// create-acls <type>:<name> principal=User:x op=<op> [perm=allow]
		// [host=*] [pattern=literal]
		"create-acls": func(tr *transcript, c txCmd, answer func(any, error)) {
			typ, name, _ := strings.Cut(c.words[0], ":")
			a := authz.ACL{ResourceType: parseName[authz.ResourceType](typ), ResourceName: name,
				PatternType: parseName[authz.PatternType](c.arg("pattern", "literal")),
				Principal:   c.arg("principal", "User:alice"), Host: c.arg("host", "*"),
				Operation:  parseName[authz.Operation](c.arg("op", "read")),
				Permission: parseName[authz.Permission](c.arg("perm", "allow"))}
			tr.core.CreateACLs(tr.now, []authz.ACL{a}, func(errs []error, err error) {
				var out []string
				for _, e := range errs {
					if e == nil {
						out = append(out, codeName(0))
					} else {
						out = append(out, errText(e))
					}
				}
				answer(strings.Join(out, " "), err)
			})
		},
		// delete-acls [type=any] [name=<n>] [pattern=any] [principal=<p>]
		// [op=any] [perm=any]: one filter
		"delete-acls": func(tr *transcript, c txCmd, answer func(any, error)) {
			f := authz.Filter{ResourceType: parseName[authz.ResourceType](c.arg("type", "any")),
				PatternType: parseName[authz.PatternType](c.arg("pattern", "any")),
				Operation:   parseName[authz.Operation](c.arg("op", "any")),
				Permission:  parseName[authz.Permission](c.arg("perm", "any"))}
			for key, field := range map[string]**string{"name": &f.ResourceName, "principal": &f.Principal, "host": &f.Host} {
				if v, ok := c.kv[key]; ok {
					*field = &v
				}
			}
			tr.core.DeleteACLs(tr.now, []authz.Filter{f}, func(res []DeletedACLs, err error) {
				var out []string
				for _, r := range res {
					if r.Err != nil {
						out = append(out, errText(r.Err))
					}
					for _, a := range r.Deleted {
						out = append(out, "deleted "+a.String())
					}
				}
				answer(strings.Join(out, "; "), err)
			})
		},
		// alter-client-quotas user=<name>|client-id=<name>|ip=<addr>...
		// (<default> for the default entity) <changes> [validate]
		"alter-client-quotas": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.ValidateOnly = c.has("validate")
			e := kmsg.NewAlterClientQuotasRequestEntry()
			for _, k := range c.keys {
				if k == "user" || k == "client-id" || k == "ip" {
					var name *string
					if v := c.kv[k]; v != "<default>" {
						name = &v
					}
					e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: k, Name: name})
				}
			}
			for _, ch := range tr.changes(c) {
				op := kmsg.AlterClientQuotasRequestEntryOp{Key: ch.key, Remove: ch.op == opDelete}
				if ch.value != nil {
					v, err := strconv.ParseFloat(*ch.value, 64)
					if err != nil {
						tr.t.Fatalf("%s: %v", c.pos, err)
					}
					op.Value = v
				}
				e.Ops = append(e.Ops, op)
			}
			req.Entries = append(req.Entries, e)
			tr.core.AlterClientQuotas(tr.now, req, nil, func(r *kmsg.AlterClientQuotasResponse, err error) { answer(r, err) })
		},
		// alter-scram upsert=<user>|delete=<user> [mech=1|2] [iterations=n]
		"alter-scram": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			mech := int8(tr.int(c, "mech", 1))
			if user, ok := c.kv["delete"]; ok {
				req.Deletions = append(req.Deletions, kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: user, Mechanism: mech})
			}
			if user, ok := c.kv["upsert"]; ok {
				// Any bytes will do for a salted password: the controller
				// only derives the stored keys from them.
				salted := sha256.Sum256([]byte("password-of-" + user))
				req.Upsertions = append(req.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: user, Mechanism: mech,
					Iterations: int32(tr.int(c, "iterations", 4096)), Salt: []byte("salt-of-" + user), SaltedPassword: salted[:]})
			}
			tr.core.AlterUserScramCredentials(tr.now, req, func(r *kmsg.AlterUserSCRAMCredentialsResponse, err error) { answer(r, err) })
		},
		// create-token as=<type:name> [owner=<type:name>] [renewers=User:a,...]
		// [max-life=<ms>] [denied]
		"create-token": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrCreateDelegationTokenRequest()
			req.SetVersion(3)
			if typ, name, ok := strings.Cut(c.arg("owner", ""), ":"); ok {
				req.OwnerPrincipalType, req.OwnerPrincipalName = &typ, &name
			}
			for _, r := range strings.FieldsFunc(c.arg("renewers", ""), func(r rune) bool { return r == ',' }) {
				typ, name, _ := strings.Cut(r, ":")
				req.Renewers = append(req.Renewers, kmsg.CreateDelegationTokenRequestRenewer{PrincipalType: typ, PrincipalName: name})
			}
			req.MaxLifetimeMillis = int64(tr.int(c, "max-life", -1))
			tr.core.CreateDelegationToken(tr.now, tr.principal(c), req, func(r *kmsg.CreateDelegationTokenResponse, err error) {
				if err == nil && r.ErrorCode == 0 {
					tr.hmacs[r.TokenID], tr.hmacs["last"] = r.HMAC, r.HMAC
				}
				answer(r, err)
			})
		},
		// renew-token as=<type:name> [token=<id>|last|unknown] [period=<ms>]
		"renew-token": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrRenewDelegationTokenRequest()
			req.HMAC, req.RenewTimeMillis = tr.hmac(c), int64(tr.int(c, "period", 0))
			tr.core.RenewDelegationToken(tr.now, tr.principal(c), req, func(r *kmsg.RenewDelegationTokenResponse, err error) { answer(r, err) })
		},
		// expire-token as=<type:name> [token=<id>|last|unknown] [period=<ms>]
		"expire-token": func(tr *transcript, c txCmd, answer func(any, error)) {
			req := kmsg.NewPtrExpireDelegationTokenRequest()
			req.HMAC, req.ExpiryPeriodMillis = tr.hmac(c), int64(tr.int(c, "period", 0))
			tr.core.ExpireDelegationToken(tr.now, tr.principal(c), req, func(r *kmsg.ExpireDelegationTokenResponse, err error) { answer(r, err) })
		},
	} {
		txOperations[name] = op
	}
}

// txChange is one change of a config or quota.
type txChange struct {
	op    int8 // opSet, opDelete, opAppend, opSubtract
	key   string
	value *string
}

// changes parses the set.<key>=<v>, delete.<key>, append.<key>=<v> and
// subtract.<key>=<v> arguments, in line order.
func (tr *transcript) changes(c txCmd) []txChange {
	var out []txChange
	for _, f := range c.fields {
		k, v, hasValue := strings.Cut(f, "=")
		opName, key, ok := strings.Cut(k, ".")
		op, known := map[string]int8{"set": opSet, "delete": opDelete, "append": opAppend, "subtract": opSubtract}[opName]
		if !ok || !known {
			continue
		}
		ch := txChange{op: op, key: key}
		if hasValue {
			ch.value = &v
		}
		out = append(out, ch)
	}
	return out
}

// principal is as=<type:name>, allowed to use tokens unless denied.
func (tr *transcript) principal(c txCmd) TokenPrincipal {
	typ, name, _ := strings.Cut(c.arg("as", "User:alice"), ":")
	return TokenPrincipal{Type: typ, Name: name, Allowed: !c.has("denied")}
}

func (tr *transcript) hmac(c txCmd) []byte {
	if mac, ok := tr.hmacs[c.arg("token", "last")]; ok {
		return mac
	}
	return []byte("no such token")
}

// parseName finds an authz enum value by its name, in any case; an
// unknown name is the enum's UNKNOWN (0).
func parseName[T interface {
	~int8
	String() string
}](s string) T {
	for v := T(0); v < 32; v++ {
		if strings.EqualFold(v.String(), s) || strings.EqualFold(strings.ReplaceAll(v.String(), "_", "-"), s) {
			return v
		}
	}
	return 0
}
