// This file implements Delta.

package proxycfg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// A proxy that serves a config (the base) is sent the next one as a
// Delta: what the next config's lists are made of, as runs of the base's
// elements kept in place and elements new to it, and the small fields
// whole. At 5,000 routes a config is 3 MB of JSON that costs a proxy tens
// of milliseconds to decode, while a change of one route is one route's
// JSON and a few runs.
//
// The config server writes deltas (AppendDelta) from the Encoder's
// output for both configs, without encoding anything again; the proxy
// reads one inside its config document (configwatch.DecodeDocument;
// DecodeDelta reads one alone) and makes the next config from its own
// (Delta.Apply). Elements are matched by the hash of their JSON, so a
// run kept is content the proxy already holds, wherever it sits in the
// next list.
//
// JSON shape:
//
//	{"base":"<version>","version":"<version>","schema":"...",
//	 "listeners":{"ops":[{"keep":[0,3]}]},
//	 "routes":{"ops":[{"keep":[0,41]},{"add":[{...}]},{"keep":[42,4958]}]},
//	 "clusters":{"null":true},
//	 "sessionKeys":[...],"accessTeams":[...]}

// Delta is a config as a change to a base config.
type Delta struct {
	// Base is the version of the config this applies to.
	Base string `json:"base"`
	// Version and Schema are the next config's.
	Version string `json:"version"`
	Schema  string `json:"schema"`
	// Listeners, Routes and Clusters are the next config's lists.
	Listeners ListDelta[Listener] `json:"listeners"`
	Routes    ListDelta[Route]    `json:"routes"`
	Clusters  ListDelta[Cluster]  `json:"clusters"`
	// SessionKeys and AccessTeams are the next config's, whole.
	SessionKeys [][]byte     `json:"sessionKeys,omitempty"`
	AccessTeams []AccessTeam `json:"accessTeams,omitempty"`
}

// ListDelta is one list of the next config: null (Null), or the
// concatenation of its runs.
type ListDelta[T any] struct {
	Null bool        `json:"null,omitempty"`
	Ops  []ListOp[T] `json:"ops,omitempty"`
}

// ListOp is one run of a list: Keep copies the base list's elements
// [Keep[0], Keep[0]+Keep[1]); Add brings elements of its own. Exactly
// one is set.
type ListOp[T any] struct {
	Keep *[2]int `json:"keep,omitempty"`
	Add  []T     `json:"add,omitempty"`
}

// decodeStrict decodes one JSON value into v, refusing unknown fields
// and anything after the value.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// maxDeltaList bounds a list a delta makes, so that a hostile or broken
// server cannot make a proxy allocate without limit by keeping a large
// run many times.
const maxDeltaList = 1 << 18

// DecodeDelta reads a delta strictly, as DecodeConfig reads a config.
func DecodeDelta(b []byte) (*Delta, error) {
	var d Delta
	if err := decodeStrict(b, &d); err != nil {
		return nil, fmt.Errorf("decoding config delta: %w", err)
	}
	if d.Base == "" || d.Version == "" {
		return nil, errors.New("decoding config delta: base and version are required")
	}
	return &d, nil
}

// Apply makes the next config from base, which must be the config of
// version d.Base. The result shares elements with base, as configs are
// never modified once made: a list kept whole is base's own (so that
// comparing the two, as the proxy does, sees one array), and other
// lists are made anew.
func (d *Delta) Apply(base *Config) (*Config, error) {
	if base == nil || base.Version != d.Base {
		have := ""
		if base != nil {
			have = base.Version
		}
		return nil, fmt.Errorf("config delta applies to version %q, not %q", d.Base, have)
	}
	next := &Config{Schema: d.Schema, Version: d.Version, SessionKeys: d.SessionKeys, AccessTeams: d.AccessTeams}
	var errs []error
	var err error
	if next.Listeners, err = applyList(base.Listeners, d.Listeners); err != nil {
		errs = append(errs, fmt.Errorf("listeners: %w", err))
	}
	if next.Routes, err = applyList(base.Routes, d.Routes); err != nil {
		errs = append(errs, fmt.Errorf("routes: %w", err))
	}
	if next.Clusters, err = applyList(base.Clusters, d.Clusters); err != nil {
		errs = append(errs, fmt.Errorf("clusters: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("config delta from %s to %s: %w", d.Base, d.Version, err)
	}
	return next, nil
}

// applyList makes one list from the base's and its runs.
func applyList[T any](base []T, l ListDelta[T]) ([]T, error) {
	if l.Null {
		if len(l.Ops) > 0 {
			return nil, errors.New("null with runs")
		}
		return nil, nil
	}
	n := 0
	for i, op := range l.Ops {
		switch {
		case (op.Keep == nil) == (op.Add == nil):
			return nil, fmt.Errorf("run %d: keep or add, exactly one", i)
		case op.Keep != nil:
			from, count := op.Keep[0], op.Keep[1]
			if from < 0 || count <= 0 || from > len(base) || count > len(base)-from {
				return nil, fmt.Errorf("run %d: keep [%d, %d) is outside the base's %d elements", i, from, from+count, len(base))
			}
			n += count
		default:
			n += len(op.Add)
		}
		if n > maxDeltaList {
			return nil, fmt.Errorf("more than %d elements", maxDeltaList)
		}
	}
	if len(l.Ops) == 1 && l.Ops[0].Keep != nil && n == len(base) {
		return base[:n:n], nil // kept whole
	}
	out := make([]T, 0, n)
	for _, op := range l.Ops {
		if op.Keep != nil {
			out = append(out, base[op.Keep[0]:op.Keep[0]+op.Keep[1]]...)
		} else {
			out = append(out, op.Add...)
		}
	}
	return out, nil
}

// AppendDelta appends to b the JSON of the delta from base to next, as an
// Encoder encoded them (it reads their elements' JSON and sums), with
// next's small fields from cfg. It writes what json.Marshal writes for the Delta (a test
// holds it to that), reusing the Encoder's JSON of every element.
func AppendDelta(b []byte, base, next Encoded, cfg *Config) ([]byte, error) {
	for _, f := range [][2]string{{`{"base":`, base.Version}, {`,"version":`, next.Version}, {`,"schema":`, cfg.Schema}} {
		s, err := json.Marshal(f[1])
		if err != nil {
			return nil, err
		}
		b = append(append(b, f[0]...), s...)
	}
	b = append(b, `,"listeners":`...)
	b = appendListDelta(b, base.Listeners, next.Listeners)
	b = append(b, `,"routes":`...)
	b = appendListDelta(b, base.Routes, next.Routes)
	b = append(b, `,"clusters":`...)
	b = appendListDelta(b, base.Clusters, next.Clusters)
	if len(cfg.SessionKeys) > 0 {
		keys, err := json.Marshal(cfg.SessionKeys)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"sessionKeys":`...), keys...)
	}
	if len(cfg.AccessTeams) > 0 {
		teams, err := json.Marshal(cfg.AccessTeams)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"accessTeams":`...), teams...)
	}
	return append(b, '}'), nil
}

// appendListDelta appends next's list as runs of base's: each element
// whose hash base has is kept from there, continuing the run while the
// elements after it follow in base too; the others are added.
func appendListDelta(b []byte, base, next JSONList) []byte {
	if next.Null {
		return append(b, `{"null":true}`...)
	}
	if len(next.Elems) == 0 {
		return append(b, `{}`...)
	}
	at := make(map[Stamp]int, len(base.Sums))
	for i := len(base.Sums) - 1; i >= 0; i-- { // the first of equal elements
		at[base.Sums[i]] = i
	}
	b = append(b, `{"ops":[`...)
	for i, first := 0, true; i < len(next.Elems); first = false {
		if !first {
			b = append(b, ',')
		}
		if k, ok := at[next.Sums[i]]; ok {
			n := 1
			for i+n < len(next.Sums) && k+n < len(base.Sums) && base.Sums[k+n] == next.Sums[i+n] {
				n++
			}
			b = append(b, `{"keep":[`...)
			b = strconv.AppendInt(b, int64(k), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, `]}`...)
			i += n
			continue
		}
		b = append(b, `{"add":[`...)
		for j := i; i < len(next.Elems); i++ {
			if _, ok := at[next.Sums[i]]; ok {
				break
			}
			if i > j {
				b = append(b, ',')
			}
			b = append(b, next.Elems[i]...)
		}
		b = append(b, `]}`...)
	}
	return append(b, `]}`...)
}
