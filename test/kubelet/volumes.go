package kubelet

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Volumes. Containers share the machine's filesystem, so a volume is a
// directory under the Pod's (<pod dir>/volumes/<name>) and a container sees
// it through its paths: an env value or an argument that starts with a
// volumeMount's mountPath is pointed at the volume's directory (and
// subPath). Programs that take their files' paths from env or flags, as
// the Gateway API conformance backends do, run unchanged; a path compiled
// into a program is not redirected.
//
// Secret, ConfigMap, emptyDir and projected volumes (of Secrets,
// ConfigMaps, the downward API (see downward.go), and ServiceAccount
// tokens, as the API server injects for kube-api-access) are supported.
// As a kubelet does, a Pod whose Secret or ConfigMap does not exist yet
// waits, its containers ContainerCreating, and starts once it appears
// (unless the volume is optional). Later changes to the Secret or
// ConfigMap are not written.

// setupVolumes writes the Pod's volumes, or says what is missing.
func (p *pod) setupVolumes(ctx context.Context) error {
	dirs := map[string]string{}
	for _, v := range p.spec.Volumes {
		dir := filepath.Join(p.dir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var err error
		switch {
		case v.EmptyDir != nil:
		case v.Secret != nil:
			err = p.writeSecret(ctx, dir, v.Secret)
		case v.ConfigMap != nil:
			err = p.writeConfigMap(ctx, dir, v.ConfigMap)
		case v.Projected != nil:
			err = p.writeProjected(ctx, dir, v.Projected)
		default:
			return &errConfig{"CreateContainerConfigError", fmt.Sprintf("volume %s: only secret, configMap, projected and emptyDir volumes are supported", v.Name)}
		}
		if err != nil {
			return err
		}
		dirs[v.Name] = dir
	}
	p.mu.Lock()
	p.volumes = dirs
	p.mu.Unlock()
	return nil
}

func (p *pod) writeSecret(ctx context.Context, dir string, v *corev1.SecretVolumeSource) error {
	s, err := p.k.kube.CoreV1().Secrets(p.namespace).Get(ctx, v.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && v.Optional != nil && *v.Optional {
		return nil
	}
	if err != nil {
		return missing("secret", v.SecretName, err)
	}
	data := maps.Clone(s.Data)
	for k, val := range s.StringData {
		data[k] = []byte(val)
	}
	return writeItems(dir, data, v.Items, v.DefaultMode, v.Optional)
}

func (p *pod) writeConfigMap(ctx context.Context, dir string, v *corev1.ConfigMapVolumeSource) error {
	cm, err := p.k.kube.CoreV1().ConfigMaps(p.namespace).Get(ctx, v.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && v.Optional != nil && *v.Optional {
		return nil
	}
	if err != nil {
		return missing("configmap", v.Name, err)
	}
	data := maps.Clone(cm.BinaryData)
	if data == nil {
		data = map[string][]byte{}
	}
	for k, val := range cm.Data {
		data[k] = []byte(val)
	}
	return writeItems(dir, data, v.Items, v.DefaultMode, v.Optional)
}

// writeProjected writes each source of a projected volume into dir.
func (p *pod) writeProjected(ctx context.Context, dir string, v *corev1.ProjectedVolumeSource) error {
	for _, src := range v.Sources {
		var err error
		switch {
		case src.Secret != nil:
			err = p.writeSecret(ctx, dir, &corev1.SecretVolumeSource{SecretName: src.Secret.Name, Items: src.Secret.Items, DefaultMode: v.DefaultMode, Optional: src.Secret.Optional})
		case src.ConfigMap != nil:
			err = p.writeConfigMap(ctx, dir, &corev1.ConfigMapVolumeSource{LocalObjectReference: src.ConfigMap.LocalObjectReference, Items: src.ConfigMap.Items, DefaultMode: v.DefaultMode, Optional: src.ConfigMap.Optional})
		case src.DownwardAPI != nil:
			data := map[string][]byte{}
			var items []corev1.KeyToPath
			for _, f := range src.DownwardAPI.Items {
				// No container of its own: a resourceFieldRef names one.
				val, err := p.envValue(corev1.Container{}, corev1.EnvVar{Name: f.Path, ValueFrom: &corev1.EnvVarSource{FieldRef: f.FieldRef, ResourceFieldRef: f.ResourceFieldRef}})
				if err != nil {
					return err
				}
				data[f.Path] = []byte(val)
				items = append(items, corev1.KeyToPath{Key: f.Path, Path: f.Path, Mode: f.Mode})
			}
			err = writeItems(dir, data, items, v.DefaultMode, nil)
		case src.ServiceAccountToken != nil:
			err = p.writeToken(ctx, dir, src.ServiceAccountToken, v.DefaultMode)
		default:
			return &errConfig{"CreateContainerConfigError", "a projected volume source of an unsupported kind"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeToken asks the API server for a token of the Pod's ServiceAccount,
// bound to the Pod, as a kubelet does.
func (p *pod) writeToken(ctx context.Context, dir string, src *corev1.ServiceAccountTokenProjection, mode *int32) error {
	sa := p.spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.name, UID: p.uid},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tok, err := p.k.kube.CoreV1().ServiceAccounts(p.namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for ServiceAccount %s: %w", sa, err)
	}
	return writeItems(dir, map[string][]byte{src.Path: []byte(tok.Status.Token)}, nil, mode, nil)
}

// missing is the waiting reason a kubelet gives for an absent source.
func missing(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return &errConfig{"ContainerCreating", fmt.Sprintf("MountVolume.SetUp failed: %s %q not found", kind, name)}
	}
	return err
}

// writeItems writes the keys items names (every key when there are none)
// with their modes.
func writeItems(dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional *bool) error {
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return &errConfig{"CreateContainerConfigError", fmt.Sprintf("volume key %q does not exist", it.Key)}
		}
		if it.Path == "" || filepath.IsAbs(it.Path) || strings.Contains(it.Path, "..") {
			return &errConfig{"CreateContainerConfigError", fmt.Sprintf("volume item path %q is not a relative path", it.Path)}
		}
		file := filepath.Join(dir, it.Path)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		if err := os.WriteFile(file, b, m); err != nil {
			return err
		}
		if err := os.Chmod(file, m); err != nil { // WriteFile keeps an existing file's mode
			return err
		}
	}
	return nil
}

// hostPath points s, when it is a path under one of c's mount paths, at
// the volume's directory.
func (p *pod) hostPath(c corev1.Container, s string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, bestLen := s, -1
	for _, m := range c.VolumeMounts {
		dir, ok := p.volumes[m.Name]
		if !ok {
			continue
		}
		mp := strings.TrimSuffix(m.MountPath, "/")
		var rest string
		switch {
		case s == mp:
		case strings.HasPrefix(s, mp+"/"):
			rest = s[len(mp)+1:]
		default:
			continue
		}
		// The longest mount path wins, as the innermost mount would.
		if len(mp) > bestLen {
			best, bestLen = filepath.Join(dir, m.SubPath, rest), len(mp)
		}
	}
	return best
}
