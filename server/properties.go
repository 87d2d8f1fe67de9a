package server

import (
	"io"

	"github.com/kraftd/kraftd/storage"
)

// ParseProperties reads a server.properties file as Kafka reads it (Java
// .properties syntax; see storage.ParseJavaProperties).
func ParseProperties(r io.Reader) (map[string]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return storage.ParseJavaProperties(string(b)), nil
}
