package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartProbePod starts the probe image with args in a pod of c and waits
// until it runs.
func (l *NodeLab) StartProbePod(ctx context.Context, c *NodeCluster, name string, args ...string) error {
	pods := c.Client.CoreV1().Pods("default")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr(int64(10)),
			Containers: []corev1.Container{{
				Name: "probe", Image: ProbeImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s on %s: %w", name, c.Name, err)
	}
	return waitFor(ctx, nil, 60*time.Second, "pod "+name+" of "+c.Name+" running", func(ctx context.Context) error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
}

// PodLogs returns the log of pod default/name of c.
func (c *NodeCluster) PodLogs(ctx context.Context, name string) (string, error) {
	out, err := c.Client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of pod %s on %s: %w", name, c.Name, err)
	}
	return string(out), nil
}

// StopPod deletes pod default/name of c (SIGTERM) and returns its log from
// the moment it ended.
func (c *NodeCluster) StopPod(ctx context.Context, name string) (string, error) {
	// The log is read while the container ends: the kubelet keeps it
	// until the pod object is gone.
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return "", err
	}
	var out string
	err := waitFor(ctx, nil, 30*time.Second, "pod "+name+" of "+c.Name+" stopped", func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		if l, err := c.PodLogs(ctx, name); err == nil {
			out = l
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Terminated != nil {
				return nil
			}
		}
		return fmt.Errorf("still running")
	})
	return out, err
}

// KillPodContainers sends SIGKILL to every container of pod ns/name of c
// (through containerd, as an OOM kill or a crash would end them), and
// returns their restart counts before.
func (c *NodeCluster) KillPodContainers(ctx context.Context, ns, name string) (map[string]int32, error) {
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	before := map[string]int32{}
	for _, s := range p.Status.ContainerStatuses {
		before[s.Name] = s.RestartCount
		id := strings.TrimPrefix(s.ContainerID, "containerd://")
		if id == "" || s.State.Running == nil {
			return nil, fmt.Errorf("container %s of %s/%s on %s is not running", s.Name, ns, name, c.Name)
		}
		if err := run(ctx, "ctr", "--address", c.Socket, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", "--all", id); err != nil {
			return nil, err
		}
	}
	return before, nil
}

// WaitPodRestarted waits until every container of pod ns/name of c
// restarted since before and the pod is Ready.
func (c *NodeCluster) WaitPodRestarted(ctx context.Context, ns, name string, before map[string]int32, timeout time.Duration) error {
	return waitFor(ctx, nil, timeout, fmt.Sprintf("pod %s/%s of %s restarted and ready", ns, name, c.Name), func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.RestartCount <= before[s.Name] || !s.Ready {
				return fmt.Errorf("container %s: restarts %d, ready %v", s.Name, s.RestartCount, s.Ready)
			}
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod not Ready")
	})
}

// TagImages gives every make images image of the node of c the tag tag
// too (the same image: a new tag for a helm upgrade).
func (c *NodeCluster) TagImages(ctx context.Context, from, tag string) error {
	for _, name := range []string{"xcc-syncer", "coredns"} {
		src := ImageRegistry + "/" + name + ":" + from
		if err := run(ctx, "ctr", "--address", c.Socket, "-n", "k8s.io", "images", "tag", "--force", src, ImageRegistry+"/"+name+":"+tag); err != nil {
			return err
		}
	}
	return nil
}

// HelmUpgrade runs helm upgrade of the release xcc-dns in c with chart,
// keeping the values and adding set.
func (l *NodeLab) HelmUpgrade(ctx context.Context, c *NodeCluster, chart string, set ...string) error {
	args := []string{"--kubeconfig", c.Kubeconfig, "upgrade", ReleaseName, l.RepoRoot + "/" + chart,
		"--namespace", SliceNamespace, "--reuse-values"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return l.helm(ctx, c, args...)
}

// WaitStatefulSetRolledOut waits until every replica of the StatefulSet
// runs its current template and is ready.
func (c *NodeCluster) WaitStatefulSetRolledOut(ctx context.Context, ns, name string, timeout time.Duration) error {
	return waitStatefulSet(ctx, c.Cluster, ns, name, timeout)
}
