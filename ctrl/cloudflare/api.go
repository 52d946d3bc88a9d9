// This file implements the Cloudflare API client the sync uses: accounts,
// zones, tunnels, DNS (Access and Load Balancing have files of their own).

package cloudflare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/accounts"
	"github.com/cloudflare/cloudflare-go/v7/dns"
	"github.com/cloudflare/cloudflare-go/v7/load_balancers"
	"github.com/cloudflare/cloudflare-go/v7/option"
	"github.com/cloudflare/cloudflare-go/v7/packages/pagination"
	"github.com/cloudflare/cloudflare-go/v7/shared"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"
	"github.com/cloudflare/cloudflare-go/v7/zones"
)

// api is the part of Cloudflare's API the sync uses, through cloudflare-go.
// The services are built from our options alone, not cloudflare.NewClient,
// which would also read CLOUDFLARE_* variables from the environment (an
// API key there would ride along on every request). cloudflare-go's own
// retries are off: the Syncer retries from the whole desired state, so a
// retry never repeats half of an old decision.
type api struct {
	accounts *accounts.AccountService
	zones    *zones.ZoneService
	records  *dns.RecordService
	tunnels  *zero_trust.TunnelCloudflaredService

	accessApps     *zero_trust.AccessApplicationService
	accessPolicies *zero_trust.AccessPolicyService
	accessTags     *zero_trust.AccessTagService

	lb *load_balancers.LoadBalancerService // with .Monitors and .Pools

	stats *Stats
}

// Stats count the calls made to Cloudflare's API.
type Stats struct {
	Calls, Writes, Errors, RateLimited atomic.Int64
}

// batchLimit is the most operations one DNS batch carries: the limit of
// Cloudflare's Free plan (paid plans allow more).
const batchLimit = 200

// newAPI builds the services; obs (nil: none) observes every call.
func newAPI(baseURL, token string, hc *http.Client, stats *Stats, obs *observer) *api {
	if obs == nil {
		obs = newObserver(nil, nil, nil)
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithAPIToken(token),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(30 * time.Second),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			stats.Calls.Add(1)
			if r.Method != http.MethodGet {
				stats.Writes.Add(1)
			}
			res, err := next(r)
			switch {
			case err != nil:
				stats.Errors.Add(1)
			case res.StatusCode == http.StatusTooManyRequests:
				stats.RateLimited.Add(1)
				stats.Errors.Add(1)
			case res.StatusCode >= 400:
				stats.Errors.Add(1)
			}
			return res, err
		}),
		option.WithMiddleware(obs.do),
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	return &api{
		accounts: accounts.NewAccountService(opts...),
		zones:    zones.NewZoneService(opts...),
		records:  dns.NewRecordService(opts...),
		tunnels:  zero_trust.NewTunnelCloudflaredService(opts...),

		accessApps:     zero_trust.NewAccessApplicationService(opts...),
		accessPolicies: zero_trust.NewAccessPolicyService(opts...),
		accessTags:     zero_trust.NewAccessTagService(opts...),

		lb: load_balancers.NewLoadBalancerService(opts...),

		stats: stats,
	}
}

// accountIDs lists the accounts the token sees.
func (a *api) accountIDs(ctx context.Context) ([]string, error) {
	ctx = withOp(ctx, opAccountList)
	const per = 50
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[accounts.Account], error) {
		return a.accounts.List(ctx, accounts.AccountListParams{Page: cf.F(float64(page)), PerPage: cf.F(float64(per))})
	})
	ids := make([]string, 0, len(list))
	for _, acc := range list {
		ids = append(ids, acc.ID)
	}
	return ids, wrap("listing accounts", err)
}

// maxPages bounds a listing, whatever the server says.
const maxPages = 1000

// pages fetches a listing page after page. A page shorter than asked for
// is the last: that spares the empty page cloudflare-go's auto-pager asks
// for, and, unlike it, every page runs under ctx.
func pages[T any](ctx context.Context, per int, fetch func(page int) (*pagination.V4PagePaginationArray[T], error)) ([]T, error) {
	var out []T
	for page := 1; page <= maxPages; page++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		res, err := fetch(page)
		if err != nil {
			return out, err
		}
		out = append(out, res.Result...)
		if len(res.Result) < per {
			break
		}
	}
	return out, nil
}

// zone is a DNS zone.
type zone struct{ id, name string }

// listZones lists the account's zones.
func (a *api) listZones(ctx context.Context, account string) ([]zone, error) {
	ctx = withOp(ctx, opZoneList)
	const per = 50
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[zones.Zone], error) {
		return a.zones.List(ctx, zones.ZoneListParams{
			Account: cf.F(zones.ZoneListParamsAccount{ID: cf.F(account)}),
			Page:    cf.F(float64(page)), PerPage: cf.F(float64(per)),
		})
	})
	out := make([]zone, 0, len(list))
	for _, z := range list {
		out = append(out, zone{id: z.ID, name: strings.ToLower(z.Name)})
	}
	return out, wrap("listing zones", err)
}

// tunnelInfo is what the sync reads of a tunnel.
type tunnelInfo struct {
	name      string
	createdAt time.Time
}

// getTunnel reads a tunnel; ok is false when the account has none by that
// ID, or it is deleted.
func (a *api) getTunnel(ctx context.Context, account, id string) (info tunnelInfo, ok bool, err error) {
	ctx = withOp(ctx, opTunnelGet)
	t, err := a.tunnels.Get(ctx, id, zero_trust.TunnelCloudflaredGetParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return tunnelInfo{}, false, nil
	}
	if err != nil {
		return tunnelInfo{}, false, wrap("reading tunnel "+id, err)
	}
	return tunnelInfo{name: t.Name, createdAt: t.CreatedAt}, t.DeletedAt.IsZero(), nil
}

// tunnelByName finds a live tunnel by name, with when it was created; ""
// when there is none.
func (a *api) tunnelByName(ctx context.Context, account, name string) (string, time.Time, error) {
	ctx = withOp(ctx, opTunnelList)
	const per = 100
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[shared.CloudflareTunnel], error) {
		return a.tunnels.List(ctx, zero_trust.TunnelCloudflaredListParams{
			AccountID: cf.F(account), Name: cf.F(name), IsDeleted: cf.F(false),
			Page: cf.F(float64(page)), PerPage: cf.F(float64(per)),
		})
	})
	if err != nil {
		return "", time.Time{}, wrap("listing tunnels named "+name, err)
	}
	for _, t := range list {
		if t.Name == name && t.DeletedAt.IsZero() {
			return t.ID, t.CreatedAt, nil
		}
	}
	return "", time.Time{}, nil
}

// countTunnels counts the account's tunnels that are not deleted.
func (a *api) countTunnels(ctx context.Context, account string) (int, error) {
	ctx = withOp(ctx, opTunnelList)
	const per = 1000
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[shared.CloudflareTunnel], error) {
		return a.tunnels.List(ctx, zero_trust.TunnelCloudflaredListParams{
			AccountID: cf.F(account), IsDeleted: cf.F(false),
			Page: cf.F(float64(page)), PerPage: cf.F(float64(per)),
		})
	})
	if err != nil {
		return 0, wrap("counting the account's tunnels", err)
	}
	return len(list), nil
}

// createTunnel creates a remotely managed tunnel; Cloudflare generates
// its secret.
func (a *api) createTunnel(ctx context.Context, account, name string) (string, error) {
	ctx = withOp(ctx, opTunnelCreate)
	t, err := a.tunnels.New(ctx, zero_trust.TunnelCloudflaredNewParams{
		AccountID: cf.F(account), Name: cf.F(name),
		ConfigSrc: cf.F(zero_trust.TunnelCloudflaredNewParamsConfigSrcCloudflare),
	})
	if err != nil {
		return "", wrap("creating tunnel "+name, err)
	}
	return t.ID, nil
}

// cleanupConnections removes every connector of the tunnel, as
// `cloudflared tunnel cleanup` does: Cloudflare refuses to delete a tunnel
// that has any (error 1022), and a connector whose Pod is gone may linger.
func (a *api) cleanupConnections(ctx context.Context, account, id string) error {
	ctx = withOp(ctx, opTunnelConnectionsDelete)
	_, err := a.tunnels.Connections.Delete(ctx, id, zero_trust.TunnelCloudflaredConnectionDeleteParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	return wrap("removing the connections of tunnel "+id, err)
}

// deleteTunnel deletes the tunnel; one already gone is no error.
func (a *api) deleteTunnel(ctx context.Context, account, id string) error {
	ctx = withOp(ctx, opTunnelDelete)
	_, err := a.tunnels.Delete(ctx, id, zero_trust.TunnelCloudflaredDeleteParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	return wrap("deleting tunnel "+id, err)
}

// tunnelToken is the credential cloudflared runs the tunnel with.
func (a *api) tunnelToken(ctx context.Context, account, id string) (string, error) {
	ctx = withOp(ctx, opTunnelTokenGet)
	tok, err := a.tunnels.Token.Get(ctx, id, zero_trust.TunnelCloudflaredTokenGetParams{AccountID: cf.F(account)})
	if err != nil {
		return "", wrap("reading the token of tunnel "+id, err)
	}
	return *tok, nil
}

// setTunnelSecret gives the tunnel a new secret (base64 of at least 32
// bytes): cloudflared can no longer open connections with a token of the
// old one, while those it opened keep serving until it stops. The token
// to run it with is then read again (tunnelToken).
func (a *api) setTunnelSecret(ctx context.Context, account, id, secret string) error {
	ctx = withOp(ctx, opTunnelSecretEdit)
	_, err := a.tunnels.Edit(ctx, id, zero_trust.TunnelCloudflaredEditParams{AccountID: cf.F(account), TunnelSecret: cf.F(secret)})
	return wrap("setting a new secret of tunnel "+id, err)
}

// getConfig returns the tunnel's remote config as Cloudflare holds it.
func (a *api) getConfig(ctx context.Context, account, id string) (json.RawMessage, error) {
	ctx = withOp(ctx, opTunnelConfigGet)
	res, err := a.tunnels.Configurations.Get(ctx, id, zero_trust.TunnelCloudflaredConfigurationGetParams{AccountID: cf.F(account)})
	if err != nil {
		return nil, wrap("reading the configuration of tunnel "+id, err)
	}
	var whole struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal([]byte(res.JSON.RawJSON()), &whole); err != nil {
		return nil, fmt.Errorf("reading the configuration of tunnel %s: %w", id, err)
	}
	return whole.Config, nil
}

// putConfig replaces the tunnel's ingress document.
func (a *api) putConfig(ctx context.Context, account, id string, doc Document) error {
	ctx = withOp(ctx, opTunnelConfigPut)
	rules := make([]zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngress, 0, len(doc.Ingress))
	for _, r := range doc.Ingress {
		p := zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngress{Service: cf.F(r.Service)}
		if r.Hostname != "" {
			p.Hostname = cf.F(r.Hostname)
		}
		if o := r.OriginRequest; o != nil {
			p.OriginRequest = cf.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngressOriginRequest{
				HTTP2Origin: cf.F(o.HTTP2Origin), OriginServerName: cf.F(o.OriginServerName), CAPool: cf.F(o.CAPool),
			})
		}
		rules = append(rules, p)
	}
	_, err := a.tunnels.Configurations.Update(ctx, id, zero_trust.TunnelCloudflaredConfigurationUpdateParams{
		AccountID: cf.F(account),
		Config:    cf.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfig{Ingress: cf.F(rules)}),
	})
	return wrap("writing the configuration of tunnel "+id, err)
}

// listRecords lists every record of a zone.
func (a *api) listRecords(ctx context.Context, zoneID string) ([]Record, error) {
	ctx = withOp(ctx, opDNSList)
	const per = 1000
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[dns.RecordResponse], error) {
		return a.records.List(ctx, dns.RecordListParams{ZoneID: cf.F(zoneID), Page: cf.F(float64(page)), PerPage: cf.F(float64(per))})
	})
	out := make([]Record, 0, len(list))
	for _, r := range list {
		out = append(out, Record{ID: r.ID, Type: string(r.Type), Name: strings.ToLower(r.Name), Content: r.Content, Proxied: r.Proxied, Comment: r.Comment})
	}
	return out, wrap("listing the records of zone "+zoneID, err)
}

// apply carries out a plan in batches, each applied by Cloudflare all or
// nothing. Deletes go first, so a record taken over is gone before its
// replacement is created.
func (a *api) apply(ctx context.Context, zoneID string, p DNSPlan) error {
	ctx = withOp(ctx, opDNSBatch)
	type op struct {
		del, put, post *Record
	}
	var ops []op
	for i := range p.Deletes {
		ops = append(ops, op{del: &p.Deletes[i]})
	}
	for i := range p.Updates {
		ops = append(ops, op{put: &p.Updates[i]})
	}
	for i := range p.Creates {
		ops = append(ops, op{post: &p.Creates[i]})
	}
	for len(ops) > 0 {
		n := min(len(ops), batchLimit)
		params := dns.RecordBatchParams{ZoneID: cf.F(zoneID)}
		var dels []dns.RecordBatchParamsDelete
		var puts []dns.BatchPutUnionParam
		var posts []dns.RecordBatchParamsPostUnion
		for _, o := range ops[:n] {
			switch {
			case o.del != nil:
				dels = append(dels, dns.RecordBatchParamsDelete{ID: cf.F(o.del.ID)})
			case o.put != nil:
				puts = append(puts, putParam(*o.put))
			default:
				posts = append(posts, postParam(*o.post))
			}
		}
		if dels != nil {
			params.Deletes = cf.F(dels)
		}
		if puts != nil {
			params.Puts = cf.F(puts)
		}
		if posts != nil {
			params.Posts = cf.F(posts)
		}
		if _, err := a.records.Batch(ctx, params); err != nil {
			return wrap("changing the records of zone "+zoneID, err)
		}
		ops = ops[n:]
	}
	return nil
}

func postParam(r Record) dns.RecordBatchParamsPostUnion {
	if r.Type == "CNAME" {
		return dns.CNAMERecordParam{Type: cf.F(dns.CNAMERecordTypeCNAME), Name: cf.F(r.Name), Content: cf.F(r.Content),
			Proxied: cf.F(r.Proxied), TTL: cf.F(dns.TTL1), Comment: cf.F(r.Comment)}
	}
	return dns.TXTRecordParam{Type: cf.F(dns.TXTRecordTypeTXT), Name: cf.F(r.Name), Content: cf.F(r.Content),
		TTL: cf.F(dns.TTL1), Comment: cf.F(r.Comment)}
}

func putParam(r Record) dns.BatchPutUnionParam {
	if r.Type == "CNAME" {
		return dns.BatchPutCNAMERecordParam{ID: cf.F(r.ID), CNAMERecordParam: postParam(r).(dns.CNAMERecordParam)}
	}
	return dns.BatchPutTXTRecordParam{ID: cf.F(r.ID), TXTRecordParam: postParam(r).(dns.TXTRecordParam)}
}

// apiError is a failed call, described without the request's credentials.
type apiError struct {
	what       string
	status     int // 0: no answer (network, timeout)
	retryAfter time.Duration
	msg        string
	kind       error // a sentinel the caller matches with errors.Is; nil for none
}

// Unwrap lets errors.Is see the error's kind.
func (e *apiError) Unwrap() error { return e.kind }

func (e *apiError) Error() string {
	if e.status == 0 {
		return fmt.Sprintf("%s: %s", e.what, e.msg)
	}
	return fmt.Sprintf("%s: Cloudflare answered %d: %s", e.what, e.status, e.msg)
}

// refused says whether the error is the token's fault: no retry will fix
// it until the user changes the token or its permissions.
func (e *apiError) refused() bool {
	if e.kind != nil { // a known cause, the account's (Load Balancing), not the token's
		return false
	}
	return e.status == http.StatusUnauthorized || e.status == http.StatusForbidden
}

// wrap describes a cloudflare-go error; nil stays nil. Only the error
// codes and messages of Cloudflare's answer are kept: cloudflare-go's own
// message quotes the request, and nothing of the request belongs in a
// status or a log.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	e := &apiError{what: what}
	var ce *cf.Error
	if errors.As(err, &ce) {
		e.status = ce.StatusCode
		var msgs []string
		for _, d := range ce.Errors {
			msgs = append(msgs, fmt.Sprintf("%s (code %d)", d.Message, d.Code))
		}
		e.msg = strings.Join(msgs, "; ")
		if e.msg == "" {
			e.msg = http.StatusText(ce.StatusCode)
		}
		if ce.Response != nil {
			e.retryAfter = retryAfter(ce.Response.Header.Get("Retry-After"), time.Now())
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		e.msg = "no answer in time"
	} else {
		e.msg = "no answer: " + errorClass(err)
	}
	return e
}

// errorClass names a transport error without its URL.
func errorClass(err error) string {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:] // "Get "https://...": dial tcp ...: connection refused" → "connection refused"
	}
	return s
}

// status is the HTTP status of a cloudflare-go error, 0 if none.
func status(err error) int {
	var ce *cf.Error
	if errors.As(err, &ce) {
		return ce.StatusCode
	}
	return 0
}

// retryAfter parses a Retry-After header: seconds, or an HTTP date
// (RFC 9110 §10.2.3). Fractional seconds, which some servers and our
// fake send, are taken too. A wait of a day or more is taken for a broken
// header and ignored (the back-off applies), so no answer can stop the
// sync for good.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && s > 0 && s < 86400 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) && t.Sub(now) < 24*time.Hour {
		return t.Sub(now)
	}
	return 0
}
