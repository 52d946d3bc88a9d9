// This file reads and checks the controller's -planes file.

package provision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// ParseInstall reads an Install from JSON and checks it: every field is
// required, the config API is https, the protocol one cloudflared has, and
// the Pods' termination grace outlasts cloudflared's. Unknown fields are
// refused, so a misspelt one is not silently left at its zero value.
func ParseInstall(data []byte) (Install, error) {
	var in Install
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Install{}, fmt.Errorf("plane install settings: %w", err)
	}
	if dec.More() {
		return Install{}, errors.New("plane install settings: more than one JSON object")
	}
	if err := in.check(); err != nil {
		return Install{}, fmt.Errorf("plane install settings: %w", err)
	}
	return in, nil
}

func (in Install) check() error {
	var errs []error
	if in.ProxyImage == "" || in.CloudflaredImage == "" {
		errs = append(errs, errors.New("proxyImage and cloudflaredImage are required"))
	}
	if u, err := url.Parse(in.ControllerURL); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("controllerURL %q: want https://host:port", in.ControllerURL))
	}
	switch in.TunnelProtocol {
	case "http2", "quic", "auto":
	default:
		errs = append(errs, fmt.Errorf("tunnelProtocol %q: want http2, quic or auto", in.TunnelProtocol))
	}
	grace, err := time.ParseDuration(in.GracePeriod)
	if err != nil || grace < 0 {
		errs = append(errs, fmt.Errorf("gracePeriod %q: want a duration such as 30s", in.GracePeriod))
	} else if time.Duration(in.TerminationGracePeriodSeconds)*time.Second <= grace {
		errs = append(errs, fmt.Errorf("terminationGracePeriodSeconds %d must outlast gracePeriod %s", in.TerminationGracePeriodSeconds, in.GracePeriod))
	}
	return errors.Join(errs...)
}
