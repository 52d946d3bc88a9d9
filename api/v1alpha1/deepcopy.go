// This file implements the DeepCopy methods the Kubernetes API machinery
// needs.

package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Deep copies, written by hand: the types are small and a code generator
// would be one more tool to install for a few dozen lines.

func (in *GatewayClassConfig) DeepCopy() *GatewayClassConfig {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = *in.Spec.DeepCopy()
	return &out
}

func (in *GatewayClassConfig) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *GatewayClassConfigSpec) DeepCopy() *GatewayClassConfigSpec {
	out := *in
	if in.CredentialsRef != nil {
		c := *in.CredentialsRef
		out.CredentialsRef = &c
	}
	if in.Tunnel != nil {
		t := *in.Tunnel
		if t.TokenSecretRef != nil {
			r := *t.TokenSecretRef
			t.TokenSecretRef = &r
		}
		if t.CredentialRotation != nil {
			r := *t.CredentialRotation
			t.CredentialRotation = &r
		}
		out.Tunnel = &t
	}
	if in.DNS != nil {
		d := *in.DNS
		d.Zones = append([]string(nil), in.DNS.Zones...)
		if in.DNS.Proxied != nil {
			p := *in.DNS.Proxied
			d.Proxied = &p
		}
		out.DNS = &d
	}
	if in.DefaultGatewayConfigRef != nil {
		r := *in.DefaultGatewayConfigRef
		out.DefaultGatewayConfigRef = &r
	}
	if in.GatewayTunnels != nil {
		p := *in.GatewayTunnels
		out.GatewayTunnels = &p
	}
	if in.Origin != nil {
		o := *in.Origin
		out.Origin = &o
	}
	return &out
}

func (in *GatewayClassConfigList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]GatewayClassConfig, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return &out
}

func (in *ExternalBackend) DeepCopy() *ExternalBackend {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = nil
	for _, c := range in.Status.Conditions {
		c2 := c
		c.LastTransitionTime.DeepCopyInto(&c2.LastTransitionTime)
		out.Status.Conditions = append(out.Status.Conditions, c2)
	}
	return &out
}

func (in *ExternalBackend) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *ExternalBackendList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]ExternalBackend, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return &out
}

func (in *AccessPolicy) DeepCopy() *AccessPolicy {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.TargetRefs = nil
	for _, r := range in.Spec.TargetRefs {
		var c gwv1.LocalPolicyTargetReferenceWithSectionName
		r.DeepCopyInto(&c)
		out.Spec.TargetRefs = append(out.Spec.TargetRefs, c)
	}
	out.Spec.Audiences = slices.Clone(in.Spec.Audiences)
	if r := in.Spec.Require; r != nil {
		out.Spec.Require = &AccessRequirements{Emails: slices.Clone(r.Emails), EmailDomains: slices.Clone(r.EmailDomains),
			Groups: slices.Clone(r.Groups), ServiceTokens: slices.Clone(r.ServiceTokens)}
	}
	if h := in.Spec.IdentityHeaders; h != nil {
		c := *h
		out.Spec.IdentityHeaders = &c
	}
	if a := in.Spec.Application; a != nil {
		c := *a
		out.Spec.Application = &c
	}
	in.Status.DeepCopyInto(&out.Status)
	return &out
}

func (in *AccessPolicy) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *AccessPolicyList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]AccessPolicy, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return &out
}

func (in *LoadBalancingPolicy) DeepCopy() *LoadBalancingPolicy {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.TargetRefs = nil
	for _, r := range in.Spec.TargetRefs {
		var c gwv1.LocalPolicyTargetReferenceWithSectionName
		r.DeepCopyInto(&c)
		out.Spec.TargetRefs = append(out.Spec.TargetRefs, c)
	}
	out.Spec.FailoverPools = slices.Clone(in.Spec.FailoverPools)
	out.Spec.Weight = clonePtr(in.Spec.Weight)
	out.Spec.Enabled = clonePtr(in.Spec.Enabled)
	if a := in.Spec.SessionAffinity; a != nil {
		c := *a
		c.TTL = clonePtr(a.TTL)
		out.Spec.SessionAffinity = &c
	}
	if h := in.Spec.HealthCheck; h != nil {
		c := *h
		c.Interval, c.Timeout, c.Retries = clonePtr(h.Interval), clonePtr(h.Timeout), clonePtr(h.Retries)
		out.Spec.HealthCheck = &c
	}
	in.Status.DeepCopyInto(&out.Status)
	return &out
}

func (in *LoadBalancingPolicy) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *LoadBalancingPolicyList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]LoadBalancingPolicy, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return &out
}

func (in *DNSPolicy) DeepCopy() *DNSPolicy {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.TargetRefs = nil
	for _, r := range in.Spec.TargetRefs {
		var c gwv1.LocalPolicyTargetReferenceWithSectionName
		r.DeepCopyInto(&c)
		out.Spec.TargetRefs = append(out.Spec.TargetRefs, c)
	}
	in.Status.DeepCopyInto(&out.Status)
	return &out
}

func (in *DNSPolicy) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *DNSPolicyList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]DNSPolicy, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return &out
}

// clonePtr is a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
