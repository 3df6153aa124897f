package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// loopback is the only address anything in the lab listens on.
const loopback = "127.0.0.1"

// corefileEdit says how to make a Corefile written for a pod run as a
// process of the lab: every server block gets `bind 127.0.0.1`, and the
// ports a pod would own (:53, :8080, :8181, :9153) become the lab's.
// Zero ports and empty strings leave that part as it is.
type corefileEdit struct {
	DNSPort     int
	HealthPort  int
	ReadyPort   int
	MetricsPort int
	// Upstream replaces the target of `forward . /etc/resolv.conf`, so no
	// query ever leaves the machine.
	Upstream string
	// Kubeconfig is added to every `kubernetes` block.
	Kubeconfig string
}

var (
	portSuffix   = regexp.MustCompile(`:[0-9]+$|:\{\$[A-Z_]+\}$`)
	hostAddrOnly = regexp.MustCompile(`^:`)
)

// localCorefile applies e to the Corefile text.
func localCorefile(text string, e corefileEdit) (string, error) {
	var out []string
	depth := 0
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		fields := strings.Fields(line)
		indent := raw[:len(raw)-len(strings.TrimLeft(raw, " \t"))]
		opens := strings.HasSuffix(line, "{")
		switch {
		case line == "":
			out = append(out, raw)
		case depth == 0 && opens && strings.HasPrefix(line, "("):
			// A snippet: the server blocks that import it get bind.
			out = append(out, raw)
		case depth == 0 && opens:
			keys := fields[:len(fields)-1]
			for i, k := range keys {
				keys[i] = serverKey(k, e.DNSPort)
			}
			out = append(out, indent+strings.Join(keys, " ")+" {", indent+"    bind "+loopback)
		case depth >= 1 && fields[0] == "health":
			out = append(out, indent+withAddr(fields, e.HealthPort))
		case depth >= 1 && fields[0] == "ready":
			out = append(out, indent+withAddr(fields, e.ReadyPort))
		case depth >= 1 && fields[0] == "prometheus":
			out = append(out, indent+withAddr(fields, e.MetricsPort))
		case depth >= 1 && fields[0] == "forward" && e.Upstream != "" && len(fields) >= 3 && fields[2] == "/etc/resolv.conf":
			fields[2] = e.Upstream
			out = append(out, indent+strings.Join(fields, " "))
		case depth >= 1 && fields[0] == "kubernetes" && e.Kubeconfig != "":
			if opens {
				out = append(out, raw, blockIndent(indent)+"kubeconfig "+e.Kubeconfig)
			} else {
				out = append(out, raw+" {", blockIndent(indent)+"kubeconfig "+e.Kubeconfig, indent+"}")
			}
		default:
			out = append(out, raw)
		}
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if depth < 0 {
			return "", fmt.Errorf("corefile: unbalanced braces at %q", raw)
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("corefile: %d unclosed braces", depth)
	}
	return strings.Join(out, "\n"), nil
}

// serverKey gives a server block key the lab's DNS port (when set).
func serverKey(k string, port int) string {
	if port == 0 {
		return k
	}
	p := ":" + strconv.Itoa(port)
	if portSuffix.MatchString(k) {
		return portSuffix.ReplaceAllString(k, p)
	}
	return k + p
}

// withAddr rewrites `health`, `ready` or `prometheus` to listen on the
// loopback address (and on port when set), keeping the rest of the line.
func withAddr(fields []string, port int) string {
	addr := ""
	rest := fields[1:]
	if len(rest) > 0 && rest[0] != "{" {
		addr, rest = rest[0], rest[1:]
	}
	switch {
	case port != 0:
		addr = loopback + ":" + strconv.Itoa(port)
	case addr == "":
		// The plugin's own default port would listen on every address;
		// such a Corefile needs a port from the lab.
	case hostAddrOnly.MatchString(addr):
		addr = loopback + addr
	}
	return strings.TrimSpace(strings.Join(append([]string{fields[0], addr}, rest...), " "))
}

// blockIndent is the indentation of the lines inside a block opened at
// indent: the walkthrough's Corefile indents those by three spaces.
func blockIndent(indent string) string { return indent + "   " }
