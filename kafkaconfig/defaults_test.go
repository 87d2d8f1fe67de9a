package kafkaconfig

import "testing"

func TestDefaults(t *testing.T) {
	for key, want := range map[string]string{
		"controller.quorum.fetch.timeout.ms": "2000",     // Apache's
		"queued.max.request.bytes":           "67108864", // kraftd's, not Apache's -1
		"kraftd.quorum.fetch.max.wait.ms":    "25",       // kraftd's own key
	} {
		if got, ok := Default(key); !ok || got != want {
			t.Errorf("Default(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := Default("ssl.keystore.location"); ok {
		t.Error("a key whose Apache default is null has a default")
	}
	if _, ok := Default("no.such.key"); ok {
		t.Error("an unknown key has a default")
	}
	defer func() {
		if recover() == nil {
			t.Error("DefaultInt of a string key did not panic")
		}
	}()
	DefaultInt("kraftd.metadata.snapshot.compression.type")
}
