// This file implements Counters, the proxy-wide counters, and counterFamilies, the table that serves them.

package observe

import (
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// Counters are the proxy-wide counts. The request path only adds to them,
// atomically; a scrape loads each where it is, under the family its row
// in counterFamilies names (the package doc says what a new one takes).
type Counters struct {
	Requests       atomic.Int64
	Responses      [len(StatusClasses)]atomic.Int64 // by StatusClass (Status)
	NoRoute        atomic.Int64
	UpstreamErrors atomic.Int64
	// What clients did wrong, answered without blaming a backend; each
	// one's answer is in its row.
	ClientBodyTimeouts  atomic.Int64
	ClientBadBodies     atomic.Int64
	ClientLimited       atomic.Int64
	ClientUploadLimited atomic.Int64
	ClientGone          atomic.Int64
	ClientBadPaths      atomic.Int64
	Timeouts            atomic.Int64
	Retries             atomic.Int64
	MirrorsSent         atomic.Int64
	MirrorsDropped      atomic.Int64
	WebSockets          atomic.Int64
	ConfigLoaded        atomic.Int64
	ConfigRejected      atomic.Int64
	ClusterUpdates      atomic.Int64
	RoutePatches        atomic.Int64
	// Access counts protected rules' requests by cfaccess.Reason:
	// [cfaccess.ReasonNone] those let through.
	Access [cfaccess.NumReasons]atomic.Int64
	// Streams counts the connections to stream sockets by StreamOutcome.
	Streams [numStreamOutcomes]atomic.Int64
}

// Status counts a response sent with code.
func (c *Counters) Status(code int) {
	c.Responses[StatusClass(code)].Add(1)
}

// counterFamily is one metric family served from Counters.
type counterFamily struct {
	// name, unit and help are the OpenTelemetry instrument's; the
	// exporter serves name with dots as underscores and "_total" added.
	name, unit, help string
	// label is the attribute that tells the family's series apart, or ""
	// when it has one series.
	label  string
	series []counterSeries
}

// counterSeries is one field of Counters and the label value it is
// served with.
type counterSeries struct {
	field string // the Counters field, an atomic.Int64
	value string // its value of the family's label; "" when the family has none
	// note, when set, says what value means; the family's help lists
	// each value with its note.
	note string
	// each, for an array field, is the label value of each element, by
	// index, in place of value.
	each []string
}

// counterFamilies are the families served from Counters, each field in
// one row.
var counterFamilies = []counterFamily{
	{"tunnelgate.requests", "{request}", "Requests received.", "", []counterSeries{
		{field: "Requests"},
	}},
	{"tunnelgate.responses", "{response}", "Responses sent, by status class.", "class", []counterSeries{
		{field: "Responses", each: StatusClasses[:]},
	}},
	{"tunnelgate.no_route", "{request}", "Requests no route matched (answered 404).", "", []counterSeries{
		{field: "NoRoute"},
	}},
	{"tunnelgate.upstream_errors", "{error}", "Upstream dial failures, resets and malformed answers.", "", []counterSeries{
		{field: "UpstreamErrors"},
	}},
	{"tunnelgate.client_errors", "{request}", "Requests refused for what their client did, by reason", "reason", []counterSeries{
		{field: "ClientBodyTimeouts", value: "body_timeout", note: "408"},
		{field: "ClientBadBodies", value: "bad_body", note: "400"},
		{field: "ClientLimited", value: "conn_share", note: "503: the client held its share of an endpoint's connections"},
		{field: "ClientUploadLimited", value: "upload_share", note: "503: an upload found the endpoint's connections for uploads, or its client's part of them, taken"},
		{field: "ClientGone", value: "client_gone", note: "499: the client went away before its answer; nothing sent"},
		{field: "ClientBadPaths", value: "bad_path", note: "400: a path the proxy refuses"},
	}},
	{"tunnelgate.upstream_timeouts", "{timeout}", "Upstream requests that timed out.", "", []counterSeries{
		{field: "Timeouts"},
	}},
	{"tunnelgate.retries", "{retry}", "Upstream requests retried.", "", []counterSeries{
		{field: "Retries"},
	}},
	{"tunnelgate.mirrors", "{request}", "Mirrored requests, sent or dropped.", "result", []counterSeries{
		{field: "MirrorsSent", value: "sent"},
		{field: "MirrorsDropped", value: "dropped"},
	}},
	{"tunnelgate.websockets", "{connection}", "WebSocket upgrades completed.", "", []counterSeries{
		{field: "WebSockets"},
	}},
	{"tunnelgate.config_loads", "{config}", "Configs offered, by whether they were accepted.", "result", []counterSeries{
		{field: "ConfigLoaded", value: "ok"},
		{field: "ConfigRejected", value: "rejected"},
	}},
	{"tunnelgate.cluster_updates", "{update}", "Cluster endpoint updates applied.", "", []counterSeries{
		{field: "ClusterUpdates"},
	}},
	{"tunnelgate.route_patches", "{config}", "Configs applied by compiling only the routes edited in them.", "", []counterSeries{
		{field: "RoutePatches"},
	}},
	{"tunnelgate.cloudflare_access_requests", "{request}", "Requests of rules protected by Cloudflare Access, by result: allowed, or the reason they were refused (403).", "result", []counterSeries{
		{field: "Access", each: accessResults()},
	}},
	{"tunnelgate.stream_connections", "{connection}", "Connections to stream sockets (TCP and TLS listeners, origin ports), by outcome.", "outcome", []counterSeries{
		{field: "Streams", each: StreamOutcomes[:]},
	}},
}

// accessResults label Counters.Access by cfaccess.Reason: "allowed" for
// ReasonNone, else the reason's name.
func accessResults() []string {
	out := make([]string, cfaccess.NumReasons)
	for r := range out {
		out[r] = cfaccess.Reason(r).String()
	}
	out[cfaccess.ReasonNone] = "allowed"
	return out
}

// description is the family's help, followed by each value and its note
// when its series have notes.
func (f *counterFamily) description() string {
	var notes []string
	for _, s := range f.series {
		if s.note != "" {
			notes = append(notes, s.value+" ("+s.note+")")
		}
	}
	if len(notes) == 0 {
		return f.help
	}
	return f.help + ": " + strings.Join(notes, ", ") + "."
}

// counterSeriesOf is one series as a scrape reads it.
type counterSeriesOf struct {
	family int // index in the families resolved
	n      *atomic.Int64
	label  string // "" for none
	value  string
}

var counterType = reflect.TypeFor[atomic.Int64]()

// counterTable resolves families (counterFamilies) against c: every
// series, with the counter it reads. It fails when a row names no field
// of Counters, or a field of Counters has no row.
func counterTable(families []counterFamily, c *Counters) ([]counterSeriesOf, error) {
	v := reflect.ValueOf(c).Elem()
	rows := map[string]bool{}
	var out []counterSeriesOf
	for i, f := range families {
		for _, s := range f.series {
			fv := v.FieldByName(s.field)
			switch {
			case !fv.IsValid():
				return nil, fmt.Errorf("%s: Counters has no field %s", f.name, s.field)
			case rows[s.field]:
				return nil, fmt.Errorf("%s: Counters.%s has a second row", f.name, s.field)
			case (f.label == "") != (s.value == "" && s.each == nil):
				return nil, fmt.Errorf("%s: Counters.%s needs a label value when, and only when, its family has a label", f.name, s.field)
			}
			rows[s.field] = true
			if fv.Kind() != reflect.Array {
				if fv.Type() != counterType {
					return nil, fmt.Errorf("%s: Counters.%s is not an atomic.Int64", f.name, s.field)
				}
				out = append(out, counterSeriesOf{i, fv.Addr().Interface().(*atomic.Int64), f.label, s.value})
				continue
			}
			if fv.Type().Elem() != counterType || fv.Len() != len(s.each) {
				return nil, fmt.Errorf("%s: Counters.%s is not an array of atomic.Int64, one per label value (%d)", f.name, s.field, len(s.each))
			}
			for j, value := range s.each {
				out = append(out, counterSeriesOf{i, fv.Index(j).Addr().Interface().(*atomic.Int64), f.label, value})
			}
		}
	}
	for _, sf := range reflect.VisibleFields(v.Type()) {
		if !rows[sf.Name] {
			return nil, fmt.Errorf("counterFamilies has no row for Counters.%s", sf.Name)
		}
	}
	return out, nil
}
