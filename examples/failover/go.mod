module github.com/kraftd/kraftd/examples/failover

go 1.26.8

require (
	github.com/kraftd/kraftd v0.0.0
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	software.sslmate.com/src/go-pkcs12 v0.7.4 // indirect
)

// This example lives in the kraftd repository and tests the package beside
// it; a module of your own drops this line and requires a kraftd release.
replace github.com/kraftd/kraftd => ../..
