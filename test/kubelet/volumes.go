package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Volumes. Containers share the machine's filesystem, so a volume is a
// directory on the host (<pod dir>/volumes/<name>, see volumesDir) and a
// container sees it through its paths: an env value or an argument (or
// the value of a -flag=value argument) that is a volumeMount's mountPath
// or a path under it, alone or after unix:, is pointed at the volume's
// directory (and subPath). Programs that take their files' paths from env
// or flags, as the Gateway API conformance backends do, run unchanged. A
// path compiled into a program, or one it learns at runtime, is not
// redirected; a program built for the stand-in maps the latter with
// HostPath (below).
//
// Secret, ConfigMap, emptyDir and projected volumes (of Secrets,
// ConfigMaps, the downward API (see downward.go), and ServiceAccount
// tokens, as the API server injects for kube-api-access) are supported.
// As a kubelet does, a Pod whose Secret or ConfigMap does not exist yet
// waits, its containers ContainerCreating, and starts once it appears
// (unless the volume is optional). Later changes to the Secret or
// ConfigMap are not written.

// volumesDir is where the Pod's volumes are: <Dir>/volumes/<the first 8
// characters of the Pod's UID>, linked from <pod dir>/volumes. Not under
// the Pod's directory, whose name (namespace, name and UID) is long,
// because a Unix socket's path must fit in 108 bytes: the chart's proxy
// listens on one in an emptyDir.
func (p *pod) volumesDir() string {
	id := string(p.uid)
	return filepath.Join(p.k.opts.Dir, "volumes", id[:min(len(id), 8)])
}

// setupVolumes writes the Pod's volumes, or says what is missing.
func (p *pod) setupVolumes(ctx context.Context) error {
	root := p.volumesDir()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(root, filepath.Join(p.dir, "volumes")); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	dirs := map[string]string{}
	for _, v := range p.spec.Volumes {
		dir := filepath.Join(root, v.Name)
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

// rewritePath is hostPath for an env value or an argument, which may also
// name a Unix socket as unix:<path> (the chart's proxy listens on
// unix:/var/run/tunnelgate/origin.sock).
func (p *pod) rewritePath(c corev1.Container, s string) string {
	if rest, ok := strings.CutPrefix(s, "unix:"); ok {
		if h := p.hostPath(c, rest); h != rest {
			return "unix:" + h
		}
		return s
	}
	return p.hostPath(c, s)
}

// hostPath points s, when it is a path under one of c's mount paths, at
// the volume's directory.
func (p *pod) hostPath(c corev1.Container, s string) string {
	return mapPath(p.mounts(c), s)
}

// mounts maps each of c's mount paths whose volume is set up to the
// volume's directory on the host, with the mount's subPath.
func (p *pod) mounts(c corev1.Container) map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		if dir, ok := p.volumes[m.Name]; ok {
			out[m.MountPath] = filepath.Join(dir, m.SubPath)
		}
	}
	return out
}

// makeSubPaths creates the subPath directories of c's mounts that do not
// exist, as the kubelet does.
func (p *pod) makeSubPaths(c corev1.Container) error {
	for _, m := range c.VolumeMounts {
		if m.SubPath == "" {
			continue
		}
		if filepath.IsAbs(m.SubPath) || strings.Contains(m.SubPath, "..") {
			return &errConfig{"CreateContainerConfigError", fmt.Sprintf("volumeMount %s: subPath %q is not a relative path", m.Name, m.SubPath)}
		}
		p.mu.Lock()
		dir, ok := p.volumes[m.Name]
		p.mu.Unlock()
		if !ok {
			continue
		}
		sub := filepath.Join(dir, m.SubPath)
		if _, err := os.Stat(sub); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapPath maps s through mounts (mount path -> host directory): when s is
// a mount path or lies under one, whole path components matching, the
// longest such mount path wins, as the innermost mount would. An absolute
// s is matched cleaned, so /mnt/../etc is not under /mnt; what matches
// nothing comes back as it was.
func mapPath(mounts map[string]string, s string) string {
	best, bestLen := s, -1
	clean := s
	if strings.HasPrefix(s, "/") {
		clean = path.Clean(s)
	}
	for mountPath, dir := range mounts {
		mp := strings.TrimSuffix(mountPath, "/")
		var rest string
		switch {
		case clean == mp:
		case strings.HasPrefix(clean, mp+"/"):
			rest = clean[len(mp)+1:]
		default:
			continue
		}
		if len(mp) > bestLen {
			best, bestLen = filepath.Join(dir, rest), len(mp)
		}
	}
	return best
}

// Paths a program learns at runtime (from a document it is sent, say
// unix:/var/run/tunnelgate/origin.sock) cannot be rewritten in its args or
// env. For those, every container gets envMounts, a JSON object of its
// mount paths to their host directories (subPath applied), and a program
// built for the stand-in maps such a path with HostPath.
const envMounts = "TUNNELGATE_KUBELET_MOUNTS"

// mountsEnv is the envMounts entry of c's environment.
func (p *pod) mountsEnv(c corev1.Container) (string, error) {
	b, err := json.Marshal(p.mounts(c))
	if err != nil {
		return "", err
	}
	return envMounts + "=" + string(b), nil
}

// HostPath maps a path as a container sees it to the file on the host the
// stand-in put there, through the mounts the Kubelet gave this process in
// $TUNNELGATE_KUBELET_MOUNTS: the longest mount path that path is, or lies
// under (whole path components), is replaced by its volume's directory.
// Outside a container of the stand-in, or with no mount matching, it
// returns path unchanged, so a program can call it whatever runs it:
//
//	sock := kubelet.HostPath(strings.TrimPrefix(addr, "unix:"))
func HostPath(path string) string {
	v := os.Getenv(envMounts)
	if v == "" {
		return path
	}
	var mounts map[string]string
	if err := json.Unmarshal([]byte(v), &mounts); err != nil {
		return path
	}
	return mapPath(mounts, path)
}
