package main

import (
	"errors"
	"syscall"
)

// The kit, and with it `kraftd cluster`, runs only on Linux
// (supervisor.ErrUnsupported), so these are never reached with a live
// cluster on Windows.

func detachedAttr() *syscall.SysProcAttr { return nil }

func processAlive(int) bool { return false }

func terminate(int) error { return errors.New("kraftd cluster runs only on Linux") }
