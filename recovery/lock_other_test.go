//go:build !unix

package recovery

import "errors"

func lockForever(string) error { return errors.New("no fcntl locks here") }
