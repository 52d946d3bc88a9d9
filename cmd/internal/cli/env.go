// This file reads the defaults a Pod's environment gives the flags.

package cli

import "os"

// EnvOr returns the environment variable key, or def when it is unset or
// empty: a default a Pod's spec may set (POD_NAME, POD_NAMESPACE).
func EnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Hostname is the machine's name, or "" when it has none: a replica's
// name outside a Pod.
func Hostname() string {
	h, _ := os.Hostname()
	return h
}
