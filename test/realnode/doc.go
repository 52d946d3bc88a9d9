// Package realnode runs a real Kubernetes node for tests, on the control
// plane of test/kubeenv: the programs a cluster's node runs, at the
// versions clusters run, with containers made by a real runtime from OCI
// images. Where test/kubelet stands in for a kubelet with local processes,
// here nothing is modeled.
//
// # What runs
//
// `make realnode` (test/tools/realnode/build.sh) puts the programs in a
// cache once per machine: kube-scheduler, kubelet and kube-proxy built
// from k8s.io/kubernetes (kubeenv.KubernetesVersion), CoreDNS built from
// its module (CoreDNSVersion), and Debian bookworm's containerd, runc,
// CNI plugins, iptables and conntrack, unpacked, not installed. StartNode
// (or Start, in a test) then runs, besides kubeenv's etcd, API server and
// controller manager:
//
//   - kube-scheduler, binding Pods to the Node;
//   - containerd 1.6 with its CRI plugin, its own root, state and socket
//     under Node.Dir, runc through the v2 shim with cgroupfs, and the
//     probe image (internal/probe, a static Go binary FROM scratch) as its
//     sandbox image, since there is no registry to pull pause from;
//   - the CNI bridge plugin with host-local addresses from PodCIDR and
//     portmap: every Pod gets a network namespace, a veth pair on Bridge
//     and an address;
//   - the kubelet, registering Node NodeName with InternalIP NodeIP, as
//     system:node:realnode (the Node authorizer applies); it serves
//     pods/log to the API server, trusting the control plane's CA;
//   - kube-proxy in iptables mode (nf_tables), writing its rules in the
//     test's network namespace: ClusterIPs answer from Pods and from the
//     test process; the kubernetes Service's endpoint is the API server
//     (ControlPlane has it advertise NodeIP), so in-cluster clients work
//     as on a cluster;
//   - CoreDNS as a Deployment in kube-system behind the kube-dns Service
//     at DNSIP, the nameserver the kubelet gives every Pod, with the
//     cluster.local search path (no upstream: other names do not resolve).
//
// Images come from OCI layouts: ImportImage imports any layout (`make
// image`'s dist/image, say) under a reference Pods then name, and
// ImportTunnelgateImage builds the project's own with the release code.
// ContainerPID finds a container's process, to check what the kernel
// applied (user, capabilities, seccomp, read-only root).
//
// # How it stays off the machine
//
// The test binary runs in a network namespace of its own (test/netns.Run
// in TestMain; StartNode refuses to run without one), and so do the
// control plane and every node program: NodeIP on a veth pair, Bridge,
// the route for the Service CIDR, kube-proxy's rules and the namespace's
// forwarding setting are the namespace's, and go with it. The node's
// programs also share a mount and a pid namespace of their own, made by
// unshare with the probe as pid 1: tmpfs over /run, /var/lib and /var/log
// take the paths containerd's shims, the kubelet and CNI fix; bind mounts
// over four /proc/sys files show the kubelet the kernel settings it
// requires (vm.overcommit_memory=1, vm.panic_on_oom=0, kernel.panic=10,
// kernel.panic_on_oops=1) while the machine keeps its own; container and
// volume mounts stay inside. The kubelet and runc make cgroups only under
// a cgroup of the node's own in each hierarchy (cgroupRoot
// tgrealnode-PID-N).
//
// Stop removes kube-proxy's rules (kube-proxy --cleanup), stops the
// programs, ends the pid namespace (the kernel kills whatever is left,
// containers and shims included, and the mount namespace goes with it),
// and removes the cgroups, the devices and Node.Dir. If the test process
// dies instead (a panic, go test's timeout, a kill), the parent-death
// signal reaches unshare, whose --kill-child ends the pid namespace all
// the same; the next StartNode removes the cgroups and directory left.
//
// # What this machine needs and allows (notes/real-runtime.md)
//
// Root, util-linux (unshare, nsenter, mount), iproute2, cgroups v1 (the
// kubelet runs with failCgroupV1: false; cgroup v1 is deprecated and a
// later kubelet may refuse it) and Go (the probe is built at start, in
// about a second with the build cache warm). Without CAP_SYS_RESOURCE
// nothing may lower an oom_score_adj: containerd runs with
// restrict_oom_score_adj and the kubelet with oomScoreAdj 0. The kubelet's
// cgroup-driver fallback for containerd 1.6 (which lacks the RuntimeConfig
// call) goes away after Kubernetes 1.37: a newer kubelet needs a newer
// containerd than Debian 12 has.
//
// # What it does not do
//
//   - NetworkPolicy: the bridge plugin enforces none; Pods reach each
//     other whatever the policies say. Of the engines a Go module
//     serves here, sigs.k8s.io/kube-network-policies hands new
//     connections to userspace with nftables' queue statement, which
//     this machine's kernel is built without (CONFIG_NFT_QUEUE unset:
//     /proc/config.gz), and kube-router's policy controller is served
//     only at v2.1.0, a release with reported security flaws.
//   - One node only, with fixed names and addresses: one per network
//     namespace, hence per test binary.
//   - No registry: images are imported; a Pod whose image is not there
//     stays in ErrImagePull (use imagePullPolicy Never or IfNotPresent).
//   - No LoadBalancer, no Ingress, no CSI or dynamic volumes, no metrics
//     server; hostPath works (Node.Dir is visible to the node).
//   - Nothing leaves the namespace: CoreDNS forwards nowhere, and Pods
//     have no route out.
//
// # Cost
//
// On 2 cores, StartNode takes about 6 s: the Node is Ready after 1.5 s,
// kube-proxy's rules are there a second later, CoreDNS is Ready 4 s after
// that. ImportTunnelgateImage takes about 7 s with the Go build cache
// warm; a Pod of the project's image is then Ready in 2 to 3 s. Stop
// takes a tenth of a second.
package realnode
