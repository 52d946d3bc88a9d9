//go:build !linux

// This file implements file events where there are none: polling only.

package standalone

import "errors"

func newEvents() (events, error) {
	return nil, errors.New("file events are not supported on this system")
}
