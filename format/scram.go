package format

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
)

// The SCRAM iteration bounds and default of `kafka-storage format
// --add-scram`, the same for both mechanisms.
const (
	scramMinIterations     = 4096
	scramMaxIterations     = 16384
	scramDefaultIterations = 4096
	scramSaltBytes         = 32
)

// scramMechanism is one SCRAM mechanism --add-scram accepts.
type scramMechanism struct {
	name string
	// id is UserScramCredentialRecord.Mechanism.
	id   int8
	hash func() hash.Hash
	// client derives the keys from a password without SASLprep, as
	// Apache's ScramFormatter does (it hashes the password's UTF-8 bytes).
	client func(user, password string) (*scram.Client, error)
}

var scramMechanisms = []scramMechanism{
	{"SCRAM-SHA-256", 1, sha256.New, func(u, p string) (*scram.Client, error) { return scram.SHA256.NewClientUnprepped(u, p, "") }},
	{"SCRAM-SHA-512", 2, sha512.New, func(u, p string) (*scram.Client, error) { return scram.SHA512.NewClientUnprepped(u, p, "") }},
}

// scramArgument is one parsed --add-scram value,
// MECHANISM=[name=...,password=...] or
// MECHANISM=[name=...,salt=...,saltedpassword=...] with optional
// iterations (and salt with a password).
type scramArgument struct {
	mech           scramMechanism
	name           string
	salt           []byte // nil: random
	iterations     int    // 0: the default
	password       *string
	saltedPassword []byte
}

// parseScramArgument reads one --add-scram value with the rules of
// Apache's kafka-storage tool: the whole value is trimmed, the mechanism is
// everything before the first '=', the rest must be bracketed; inside, the
// comma-separated components are key=value with keys taken as written
// (untrimmed) and a value that is wholly "quoted" unquoted; salt and
// saltedpassword are base64; unknown keys are refused. A later duplicate
// key wins, as in Apache's map of components.
func parseScramArgument(input string) (scramArgument, error) {
	input = strings.TrimSpace(input)
	mechName, config, ok := strings.Cut(input, "=")
	if !ok {
		return scramArgument{}, fmt.Errorf("no '=' in SCRAM argument %q", input)
	}
	i := slices.IndexFunc(scramMechanisms, func(m scramMechanism) bool { return m.name == mechName })
	if i < 0 {
		return scramArgument{}, fmt.Errorf("the add-scram mechanism %q is not supported (want SCRAM-SHA-256 or SCRAM-SHA-512)", mechName)
	}
	if !strings.HasPrefix(config, "[") || !strings.HasSuffix(config, "]") || len(config) < 2 {
		return scramArgument{}, fmt.Errorf("SCRAM argument %q: the configuration must be enclosed in [ and ]", input)
	}
	components := map[string]string{}
	for _, component := range strings.Split(config[1:len(config)-1], ",") {
		key, value, ok := strings.Cut(component, "=")
		if !ok {
			return scramArgument{}, fmt.Errorf("no '=' in SCRAM component %q", component)
		}
		if len(value) >= 2 && strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`) {
			value = value[1 : len(value)-1]
		}
		components[key] = value
	}
	return scramArgumentFrom(scramMechanisms[i], components)
}

// scramArgumentFrom checks the components of one --add-scram value.
func scramArgumentFrom(mech scramMechanism, components map[string]string) (scramArgument, error) {
	arg := scramArgument{mech: mech}
	take := func(key string) (string, bool) {
		v, ok := components[key]
		delete(components, key)
		return v, ok
	}
	var ok bool
	if arg.name, ok = take("name"); !ok {
		return arg, fmt.Errorf("--add-scram %s: 'name' is required", mech.name)
	}
	if s, ok := take("salt"); ok {
		salt, err := decodeBase64(s)
		if err != nil {
			return arg, fmt.Errorf("--add-scram %s: salt %q is not base64: %v", mech.name, s, err)
		}
		arg.salt = salt
	}
	if s, ok := take("iterations"); ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return arg, fmt.Errorf("--add-scram %s: iterations %q is not a number", mech.name, s)
		}
		if n < scramMinIterations || n > scramMaxIterations {
			return arg, fmt.Errorf("--add-scram %s: iterations must be between %d and %d, not %d", mech.name, scramMinIterations, scramMaxIterations, n)
		}
		arg.iterations = int(n)
	}
	password, hasPassword := take("password")
	salted, hasSalted := take("saltedpassword")
	switch {
	case hasPassword:
		arg.password = &password
	case !hasSalted:
		return arg, fmt.Errorf("--add-scram %s: one of 'password' or 'saltedpassword' is required", mech.name)
	case arg.salt == nil:
		return arg, fmt.Errorf("--add-scram %s: 'saltedpassword' needs 'salt'", mech.name)
	default:
		sp, err := decodeBase64(salted)
		if err != nil {
			return arg, fmt.Errorf("--add-scram %s: saltedpassword is not base64: %v", mech.name, err)
		}
		arg.saltedPassword = sp
	}
	if len(components) > 0 {
		keys := make([]string, 0, len(components))
		for k := range components {
			keys = append(keys, strconv.Quote(k))
		}
		slices.Sort(keys)
		return arg, fmt.Errorf("--add-scram %s: unknown SCRAM configuration %s", mech.name, strings.Join(keys, ", "))
	}
	return arg, nil
}

// record derives the UserScramCredentialRecord: a random salt unless one
// was given, 4096 iterations unless told, StoredKey = H(HMAC(SaltedPassword,
// "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key")
// (RFC 5802). A password goes through xdg-go/scram; a given salted
// password is already the PBKDF2 output, so only the two HMACs remain.
func (a scramArgument) record() (*metadata.UserScramCredentialRecord, error) {
	salt := a.salt
	if salt == nil {
		salt = make([]byte, scramSaltBytes)
		rand.Read(salt)
	}
	iterations := a.iterations
	if iterations == 0 {
		iterations = scramDefaultIterations
	}
	rec := &metadata.UserScramCredentialRecord{Name: a.name, Mechanism: a.mech.id, Salt: salt, Iterations: int32(iterations)}
	if a.password != nil {
		client, err := a.mech.client(a.name, *a.password)
		if err != nil {
			return nil, fmt.Errorf("--add-scram %s: %v", a.mech.name, err)
		}
		creds := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iterations})
		rec.StoredKey, rec.ServerKey = creds.StoredKey, creds.ServerKey
		return rec, nil
	}
	rec.StoredKey, rec.ServerKey = controller.ScramKeys(a.mech.hash, a.saltedPassword)
	return rec, nil
}

// ScramRecords parses every --add-scram value into bootstrap records, in
// the order given, refusing them below metadata.version 3.5-IV2.
func ScramRecords(args []string, mv int16) ([]metadata.Record, error) {
	if len(args) == 0 {
		return nil, nil
	}
	if mv < controller.MVScram {
		return nil, fmt.Errorf("SCRAM is only supported in metadata.version %s or later", controller.MetadataVersionName(controller.MVScram))
	}
	var out []metadata.Record
	for _, s := range args {
		arg, err := parseScramArgument(s)
		if err != nil {
			return nil, err
		}
		rec, err := arg.record()
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// decodeBase64 reads standard base64 with or without its '=' padding, as
// Java's basic decoder does.
func decodeBase64(s string) ([]byte, error) {
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}
