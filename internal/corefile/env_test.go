package corefile

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// envSecret is what the test's environment holds under every name a
// substitution of the Corefile parser could look up.
const envSecret = "s3cr3t-of-the-operator"

// envCorefiles put each substitution form the Corefile parser expands
// ({$VAR}, {%VAR%}, and their default-looking forms, which this
// parser reads as variables named "VAR:default") where the parser
// expands it: a server block key, a directive, an argument, a quoted
// argument, an import's path, a snippet's name.
var envCorefiles = map[string]string{
	"$ in an argument":          ".:53 {\n    forward . {$XCC_TEST_SECRET}\n}\n",
	"% in an argument":          ".:53 {\n    forward . {%XCC_TEST_SECRET%}\n}\n",
	"$ with a default":          ".:53 {\n    forward . {$XCC_TEST_SECRET:default}\n}\n",
	"% with a default":          ".:53 {\n    forward . {%XCC_TEST_SECRET:default%}\n}\n",
	"% inside a word":           ".:53 {\n    forward . 10.0.0.1:{%XCC_TEST_SECRET%}\n}\n",
	"% quoted":                  ".:53 {\n    forward . \"{%XCC_TEST_SECRET%}\"\n}\n",
	"% in the key":              "{%XCC_TEST_SECRET%}:53 {\n    whoami\n}\n",
	"$ in the key":              "xcc.test:{$XCC_TEST_SECRET} {\n    whoami\n}\n",
	"% as a directive":          ".:53 {\n    {%XCC_TEST_SECRET%}\n}\n",
	"% in an import":            ".:53 {\n    import {%XCC_TEST_SECRET%}\n}\n",
	"% naming a snippet import": "(s) {\n    whoami\n}\n.:53 {\n    import {%XCC_TEST_SECRET%}\n}\n",
}

func setEnvSecret(t *testing.T) {
	for _, name := range []string{"XCC_TEST_SECRET", "XCC_TEST_SECRET:default"} {
		t.Setenv(name, envSecret)
	}
}

// A Corefile is written by a workload cluster's admin and parsed on the
// operator's machine (explain, patch-corefile) or in serve's pod (Keep):
// any substitution form of the parser is refused before it parses, with
// a message saying which line, and the environment's value appears in
// nothing returned.
func TestCorefileEnvironmentRefused(t *testing.T) {
	setEnvSecret(t)
	for name, text := range envCorefiles {
		leaked := func(what string, values ...string) {
			t.Helper()
			for _, v := range values {
				if strings.Contains(v, envSecret) {
					t.Errorf("%s: %s holds the environment's value: %q", name, what, v)
				}
			}
		}
		refused := func(what string, err error) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), "environment variable") || !strings.Contains(err.Error(), "line ") {
				t.Errorf("%s: %s: err %v, want a refusal naming the environment and the line", name, what, err)
			}
			if err != nil {
				leaked(what+" error", err.Error())
			}
		}
		blk, err := FindZone(text, "xcc.test")
		refused("FindZone", err)
		if blk != nil {
			leaked("FindZone", append([]string{blk.Key}, blk.ForwardTo...)...)
		}
		h, err := ReloadHash(DefaultConfPath, text)
		refused("ReloadHash", err)
		leaked("ReloadHash", h)
		got, _, err := Patch(text, Options{ForwardTo: forwardTo})
		refused("Patch", err)
		leaked("Patch", got)
		withBlock := text + "\n" + blockFor
		got, _, err = Patch(withBlock, Options{Remove: true})
		refused("Patch --remove", err)
		leaked("Patch --remove", got)
		refused("Validate", Validate(text, kubeadmCorefile))
		refused("Validate of the previous", Validate(kubeadmCorefile, text))

		client := fake.NewClientset(corednsConfigMap(text))
		_, err = ApplyToConfigMap(context.Background(), client, DefaultNamespace, DefaultConfigMap, Options{ForwardTo: forwardTo})
		refused("ApplyToConfigMap", err)
		if ups := updates(client); len(ups) != 0 {
			t.Errorf("%s: ApplyToConfigMap wrote %d times, want none", name, len(ups))
		}
	}
}

// What the parser does not expand is no refusal: a form in a comment,
// braces and signs apart.
func TestCorefileEnvironmentLookalikes(t *testing.T) {
	setEnvSecret(t)
	for _, text := range []string{
		".:53 {\n    # forward . {$XCC_TEST_SECRET} {%XCC_TEST_SECRET%}\n    whoami\n}\n",
		".:53 {\n    whoami { $XCC_TEST_SECRET % }\n}\n",
	} {
		if _, err := FindZone(text, "xcc.test"); err != nil {
			t.Errorf("FindZone(%q): %v", text, err)
		}
		if _, _, err := Patch(text, Options{ForwardTo: forwardTo}); err != nil {
			t.Errorf("Patch(%q): %v", text, err)
		}
	}
}
