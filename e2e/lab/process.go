package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// stopGrace is how long a process has to exit after SIGTERM before it
	// gets SIGKILL.
	stopGrace = 10 * time.Second
	// tailLines is how many lines of each log a failure report shows.
	tailLines = 40
	// portAttempts bounds the retries when a port taken between picking it
	// and binding it makes a process fail to start.
	portAttempts = 5
)

// Process is one child process of the lab, in a process group of its own so
// that stopping it stops whatever it started too.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// startProcess runs bin with args and env (added to the lab's own
// environment), stdout and stderr going to logDir/<name>.log (appended, so a
// restarted process keeps its earlier log).
func startProcess(logDir, name string, env []string, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	fmt.Fprintf(f, "==> %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Pid is the process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM to the process group and SIGKILL after stopGrace.
func (p *Process) Stop() {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.Kill()
	}
}

// Kill sends SIGKILL to the process group and waits for the process to end.
func (p *Process) Kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

func (p *Process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		// Ended already: its id may belong to another process by now.
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string { return tailFile(p.LogPath, n) }

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// callers retry with a new one when a process fails to bind it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// A DNS server needs the same port free on UDP.
	u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return freePort()
	}
	u.Close()
	return port, nil
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// errExited is returned by waits when the awaited process ended first.
var errExited = errors.New("process exited")

// waitFor polls check every interval until it returns nil, the deadline
// passes, ctx ends or p (when not nil) exits.
func waitFor(ctx context.Context, p *Process, timeout time.Duration, what string, check func(context.Context) error) error {
	const interval = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p != nil {
			if exited, err := p.Exited(); exited {
				why := errExited
				if err != nil {
					why = fmt.Errorf("%w (%w)", errExited, err)
				}
				return fmt.Errorf("%s: %w; last lines of %s:\n%s", what, why, p.LogPath, p.Tail(tailLines))
			}
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s: not within %s: %v", what, timeout, last)
			if p != nil {
				msg += fmt.Sprintf("; last lines of %s:\n%s", p.LogPath, p.Tail(tailLines))
			}
			return errors.New(msg)
		case <-time.After(interval):
		}
	}
}

// copyTails writes the tail of every process's log to w.
func copyTails(w io.Writer, procs []*Process) {
	for _, p := range procs {
		fmt.Fprintf(w, "----- %s (%s), last %d lines -----\n%s\n", p.Name, p.LogPath, tailLines, p.Tail(tailLines))
	}
}

// group keeps the lab's processes to stop them in reverse start order.
type group struct {
	mu    sync.Mutex
	procs []*Process
}

func (g *group) add(p *Process) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.procs = append(g.procs, p)
}

func (g *group) all() []*Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Process(nil), g.procs...)
}

func (g *group) stopAll() {
	procs := g.all()
	var wg sync.WaitGroup
	for i := len(procs) - 1; i >= 0; i-- {
		wg.Add(1)
		go func(p *Process) {
			defer wg.Done()
			p.Stop()
		}(procs[i])
	}
	wg.Wait()
}
