// Package systemd holds kraftd's systemd unit, kraftd.service, and the
// test that checks it: systemd-analyze verify accepts it without a
// warning, it keeps its hardening, and its command line is one the real
// binary takes. There is no Go code to import here; the package must
// never grow any, so the unit stays a plain file an operator copies.
package systemd
