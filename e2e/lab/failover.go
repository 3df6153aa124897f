package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaderElectionID is the Lease the controller replicas share: the
// controller's default, the name the management chart's Role lets its
// ServiceAccount update.
const LeaderElectionID = "xcc-syncer-controller"

// The leader election timing the replicas run with, passed as flags: the
// controller's defaults, spelled out so the failover test can derive its
// bounds from them.
const (
	LeaseDuration = 10 * time.Second
	RenewDeadline = 7 * time.Second
	RetryPeriod   = time.Second
)

// ControllerReplica is one `xcc-syncer controller` run with leader
// election on, as one pod of a Deployment with several replicas would be:
// the same Lease as the others, an identity of its own, its own
// --http-address and log.
type ControllerReplica struct {
	Name    string
	Process *Process
	// HTTP is its --http-address.
	HTTP string

	args []string
	l    *Lab
}

// StopController stops the lab's single controller (SIGTERM, which it
// runs with leader election off), so replicas with leader election can
// take its place. StartController starts it again.
func (l *Lab) StopController() {
	if l.Controller != nil {
		l.Controller.Stop()
		l.Controller = nil
	}
}

// StartController starts the lab's single controller (leader election
// off) and waits until it is ready.
func (l *Lab) StartController(ctx context.Context) error {
	return l.StartControllerWith(ctx)
}

// StartControllerWith starts the lab's single controller as
// StartController does, with the flags args added to the lab's (a test
// runs it with its own --allowed-cidrs or limits, then stops it and
// starts the default one again).
func (l *Lab) StartControllerWith(ctx context.Context, args ...string) error {
	if l.Controller != nil {
		return errors.New("the controller runs already")
	}
	return l.startController(ctx, args...)
}

// StartControllerReplica starts `xcc-syncer controller` with leader
// election on (Lease SliceNamespace/LeaderElectionID on the management
// cluster) and waits until its /readyz answers, which a replica standing
// by does at once.
func (l *Lab) StartControllerReplica(ctx context.Context, name string) (*ControllerReplica, error) {
	if l.ControllerKubeconfig == "" {
		kc, err := chartKubeconfig(ctx, l.Management, ReleaseName)
		if err != nil {
			return nil, err
		}
		l.ControllerKubeconfig = kc
	}
	r := &ControllerReplica{Name: "xcc-syncer-controller-" + name, l: l}
	err := l.startRetrying(ctx, r.Name, 1, func(ports []int) (*Process, func(context.Context) error, error) {
		r.HTTP = fmt.Sprintf("%s:%d", loopback, ports[0])
		r.args = []string{"controller",
			"--kubeconfig", l.ControllerKubeconfig,
			"--http-address", r.HTTP,
			"--state-namespace", SliceNamespace,
			"--leader-elect=true",
			"--leader-election-namespace", SliceNamespace,
			"--leader-election-id", LeaderElectionID,
			"--leader-elect-lease-duration", LeaseDuration.String(),
			"--leader-elect-renew-deadline", RenewDeadline.String(),
			"--leader-elect-retry-period", RetryPeriod.String(),
		}
		p, err := startProcess(l.LogDir, r.Name, nil, l.Bin("xcc-syncer"), r.args...)
		r.Process = p
		return p, httpOK("http://" + r.HTTP + "/readyz"), err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Restart starts the replica again with the same flags (a pod restarted
// by its Deployment) and waits until it is ready.
func (r *ControllerReplica) Restart(ctx context.Context) error {
	if exited, _ := r.Process.Exited(); !exited {
		return fmt.Errorf("%s runs still", r.Name)
	}
	p, err := startProcess(r.l.LogDir, r.Name, nil, r.l.Bin("xcc-syncer"), r.args...)
	if err != nil {
		return err
	}
	r.Process = p
	r.l.procs.add(p)
	return waitFor(ctx, p, processReadyTimeout, "restarted "+r.Name, httpOK("http://"+r.HTTP+"/readyz"))
}

// Kill sends SIGKILL, as a node failure would, and waits for the end.
func (r *ControllerReplica) Kill() { r.Process.Kill() }

// Terminate sends SIGTERM, as the kubelet does to a pod it deletes, and
// returns at once; Wait waits for the end.
func (r *ControllerReplica) Terminate() { r.Process.signal(syscall.SIGTERM) }

// Wait waits until the process has ended, at most timeout.
func (r *ControllerReplica) Wait(timeout time.Duration) error {
	select {
	case <-r.Process.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s still runs %s after the signal", r.Name, timeout)
	}
}

// identityLine is what the controller logs before it asks for the Lease.
var identityLine = regexp.MustCompile(`"Waiting for leadership".* identity="([^"]+)"`)

// Identity is the Lease holder identity the running process uses, read
// from its log (the controller makes it from the host name and a fresh
// UUID, so every start has another). It waits for the line.
func (r *ControllerReplica) Identity(ctx context.Context) (string, error) {
	var id string
	err := waitFor(ctx, r.Process, 30*time.Second, r.Name+" identity", func(context.Context) error {
		b, err := os.ReadFile(r.Process.LogPath)
		if err != nil {
			return err
		}
		// The log is appended to across restarts: only this start's part.
		s := string(b)
		if i := strings.LastIndex(s, "==> "); i >= 0 {
			s = s[i:]
		}
		m := identityLine.FindAllStringSubmatch(s, -1)
		if len(m) == 0 {
			return errors.New("no identity logged yet")
		}
		id = m[len(m)-1][1]
		return nil
	})
	return id, err
}

// Lease is what the controllers' coordination Lease says.
type Lease struct {
	Holder       string
	Transitions  int32
	DurationSecs int32
	RenewTime    time.Time
}

// ControllerLease reads the controller replicas' Lease on the management
// cluster (with the admin client).
func (l *Lab) ControllerLease(ctx context.Context) (Lease, error) {
	ls, err := l.Management.Client.CoordinationV1().Leases(SliceNamespace).Get(ctx, LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		return Lease{}, fmt.Errorf("get Lease %s/%s: %w", SliceNamespace, LeaderElectionID, err)
	}
	var out Lease
	if ls.Spec.HolderIdentity != nil {
		out.Holder = *ls.Spec.HolderIdentity
	}
	if ls.Spec.LeaseTransitions != nil {
		out.Transitions = *ls.Spec.LeaseTransitions
	}
	if ls.Spec.LeaseDurationSeconds != nil {
		out.DurationSecs = *ls.Spec.LeaseDurationSeconds
	}
	if ls.Spec.RenewTime != nil {
		out.RenewTime = ls.Spec.RenewTime.Time
	}
	return out, nil
}
