// Package imageenv turns a container's environment into server.properties
// lines the way the apache/kafka image does, so that a kraftd container
// takes the same KAFKA_* variables as an Apache controller's container.
//
// It owns only that mapping and the merge with a mounted properties file.
// It must never read the process environment or the file system itself,
// nor judge the properties it produces: the caller passes both in, and
// server.ParseConfig validates the result like any other configuration.
package imageenv
