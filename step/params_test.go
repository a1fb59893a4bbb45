package step

import (
	"strings"
	"testing"
)

// Where a placeholder sits decides how its value goes in: a word of its
// own is shell-quoted (any value), anywhere else only a plain token; places
// gpulab cannot read are refused.
func TestPlaces(t *testing.T) {
	for _, tc := range []struct {
		command string
		want    []placeKind
		err     string
	}{
		{`cat -- {{f}}`, []placeKind{placeWord}, ""},
		{`kubectl run x --image={{image}} -n {{ns}}`, []placeKind{placeWord, placeWord}, ""},
		{`CUDA_VISIBLE_DEVICES={{mig}} python3 -c 'x'`, []placeKind{placeWord}, ""},
		{`echo "{{x}}"`, []placeKind{placeDQWhole}, ""},
		{`echo "image: {{x}}"`, []placeKind{placeToken}, ""},
		{`echo 'a {{x}} b'`, []placeKind{placeToken}, ""},
		{`kubectl --overrides='{"image":"'{{x}}'"}'`, []placeKind{placeToken}, ""},
		{"kubectl create -f - <<'EOF'\nimage: {{x}}\nEOF", []placeKind{placeToken}, ""},
		{"cat <<EOF\nimage: {{x}}\nEOF", []placeKind{placeToken}, ""},
		{"cat <<EOF\n$(echo {{x}})\nEOF", []placeKind{placeWord}, ""},
		{`echo $(( {{n}} * 2 ))`, []placeKind{placeToken}, ""},
		{`echo "${HOME:-{{x}}}"`, []placeKind{placeToken}, ""},
		{"echo `echo {{x}}`", []placeKind{placeToken}, ""},
		{`echo "$(echo {{x}})"`, []placeKind{placeWord}, ""},
		{`echo $HOME/{{x}}`, []placeKind{placeToken}, ""},
		{"echo hi # {{x}}", nil, "where the shell does not read it as text"},
		// Places where the value would be run as a command or as code,
		// whatever its quoting: refused.
		{`{{x}} --version`, nil, "in the command's name"},
		{`eval {{x}}`, nil, "among the arguments of eval"},
		{`trap {{x}} EXIT`, nil, "among the arguments of trap"},
		{`exec {{x}}`, nil, "among the arguments of exec"},
		{`sh -c {{x}}`, nil, "in the script sh runs"},
		{`bash -c "{{x}}"`, nil, "in the script bash runs"},
		{`bash -lc {{x}} arg0`, nil, "in the script bash runs"},
		{`/bin/sh {{x}}`, nil, "in the script sh runs"},
		{`python3 -c {{x}}`, nil, "in the program python3 runs"},
		{`perl -e {{x}}`, nil, "in the program perl runs"},
		{`awk {{x}} /dev/null`, nil, "in awk's program"},
		{`awk -F: {{x}} /etc/passwd`, nil, "in awk's program"},
		{`echo {{x}} | sh`, nil, "in what is piped into sh"},
		{`su -c {{x}} nobody`, nil, "in the command su runs"},
		// The review's ways through: an alias's value, find's -exec, sed's
		// script (GNU sed's e command), what a container runs, and the
		// value passed on in a variable or a file.
		{`alias q={{x}}; q`, nil, "among the arguments of alias"},
		{`find . -exec {{x}} \;`, []placeKind{placeNumber}, ""},
		{`find . -name {{x}} -exec rm {} +`, []placeKind{placeWord}, ""},
		{`sed -e {{x}} /etc/hosts`, nil, "in sed's script"},
		{`sed --expression={{x}} /etc/hosts`, nil, "in sed's script"},
		{`sed {{x}} /etc/hosts`, nil, "in sed's script"},
		{`sed -n 1p {{x}}`, []placeKind{placeWord}, ""},
		{`sed -e 1p {{x}}`, []placeKind{placeWord}, ""},
		{`docker run img {{x}}`, []placeKind{placeNumber}, ""},
		{`docker run --rm --name n --gpus all --ipc=host {{image}} all_reduce_perf -g {{gpus}}`, []placeKind{placeWord, placeNumber}, ""},
		{`docker run --entrypoint {{x}} img`, nil, "in the container's entrypoint"},
		{`docker run --entrypoint={{x}} img`, nil, "in the container's entrypoint"},
		{`x={{x}}; $x`, nil, "through a variable it is assigned to: puts a parameter in the command's name"},
		{`x={{x}}; eval "$x"`, nil, "through a variable it is assigned to: puts a parameter among the arguments of eval"},
		{`for x in {{x}}; do bash -c "${x}"; done`, nil, "through a variable it is assigned to: puts a parameter in the script bash runs"},
		{`x={{x}}; echo "$x"`, []placeKind{placeWord}, ""},
		{`printf %s {{x}} > /tmp/s; . /tmp/s`, nil, "sources a file, and has parameters"},
		// Data: an argument a script gets, an option's value, awk's input.
		{`sh -c 'echo "$1"' sh {{x}}`, []placeKind{placeWord}, ""},
		{`python3 -c 'import sys' {{x}}`, []placeKind{placeWord}, ""},
		{`awk -v n={{x}} '{print n}' /dev/null`, []placeKind{placeWord}, ""},
		{`awk '{print}' {{x}}`, []placeKind{placeWord}, ""},
		{`echo {{x}} | grep a`, []placeKind{placeWord}, ""},
		{`export NAME={{x}}`, []placeKind{placeWord}, ""},
		// A command that runs a command from its arguments: numbers only.
		{`timeout {{x}} sleep 1`, []placeKind{placeNumber}, ""},
		{`sudo {{x}}`, []placeKind{placeNumber}, ""},
		{`kubectl exec pod -- {{x}}`, []placeKind{placeNumber}, ""},
		{`kubectl -n {{x}} exec pod -- id`, []placeKind{placeWord}, ""},
		{`numactl --cpunodebind={{x}} id`, []placeKind{placeWord}, ""},
		// Names and arithmetic: plain tokens.
		{`[[ {{x}} -eq 1 ]]`, []placeKind{placeToken}, ""},
		{`declare -i n={{x}}`, []placeKind{placeToken}, ""},
		{`printf -v {{x}} hi`, []placeKind{placeToken}, ""},
		{`read {{x}} <<< hi`, []placeKind{placeToken}, ""},
		{"cat <<{{x}}\nhi\n{{x}}", nil, "here-document"},
		{`echo "unclosed {{x}}`, nil, "cannot be parsed"},
	} {
		kinds, _, err := places(tc.command)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.command, err, tc.err)
			}
			continue
		}
		if err != nil || len(kinds) != len(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.command, kinds, err, tc.want)
			continue
		}
		for i := range kinds {
			if kinds[i] != tc.want[i] {
				t.Errorf("%q: placeholder %d is %v, want %v", tc.command, i, kinds[i], tc.want[i])
			}
		}
	}
}

func TestExpandQuotesOrRefuses(t *testing.T) {
	for _, tc := range []struct {
		command string
		v       string
		want    string
		err     string
	}{
		{`cat -- {{x}}`, "a b'c", `cat -- 'a b'\''c'`, ""},
		{`echo "{{x}}"`, "$(id)", `echo ""'$(id)'""`, ""},
		{`echo 'v={{x}}'`, "busybox:1.36", `echo 'v=busybox:1.36'`, ""},
		{`echo 'v={{x}}'`, "a'b", "", "not a plain token"},
		{"cat <<'EOF'\nimage: {{x}}\nEOF", "busybox\nEOF\ntouch /tmp/p", "", "control character"},
		{"cat <<'EOF'\nimage: {{x}}\nEOF", "-x", "", "not a plain token"},
		{`cat -- {{x}}`, "notes\u202etxt.sh", "", "bidi/format character"},
		{`echo "{{x}}"`, "a\u2028b", "", "bidi/format character"},
		{`cat -- {{x}}`, "\ufeffx", "", "bidi/format character"},
		{`cat -- {{x}}`, "Ünïcødé ok", `cat -- 'Ünïcødé ok'`, ""},
	} {
		got, _, err := Expand(tc.command, map[string]string{"x": tc.v})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Expand(%q, %q) = %q, %v; want error %q", tc.command, tc.v, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q, %q) = %q, %v; want %q", tc.command, tc.v, got, err, tc.want)
		}
	}
}

func TestParamTypes(t *testing.T) {
	one, many := 1.0, 64.0
	for _, tc := range []struct {
		p    Param
		good []string
		bad  []string
	}{
		{Param{Name: "n", Type: "int", Min: &one, Max: &many}, []string{"1", "8", "64"}, []string{"0", "65", "8.5", "8; id", "9223372036854775808"}},
		{Param{Name: "f", Type: "number"}, []string{"1.5", "200", "-3"}, []string{"x", "1,5", "NaN", "Inf", "infinity", "0x1p4"}},
		{Param{Name: "ns", Type: "name"}, []string{"default", "team-a", "a.b"}, []string{"Team", "-a", "a_b", "a b", strings.Repeat("a", 254)}},
		{Param{Name: "i", Type: "image"}, []string{"busybox:1.36", "nvcr.io/nvidia/pytorch:24.05-py3", "localhost:5000/a/b@sha256:" + strings.Repeat("a", 64)}, []string{"busybox\nEOF", `x","y":"`, "Busybox", "a b"}},
		{Param{Name: "u", Type: "url"}, []string{"http://127.0.0.1:8000", "https://vllm.lab:443/v1", "http://[::1]:8000/"}, []string{"127.0.0.1:8000", "ftp://x", "http://x/'$(id)'", "http://",
			"http://h:99999999/", "http://h\u00a0x/", "http://h/[1-100000000]", "http://user@h/"}},
		{Param{Name: "s"}, []string{"meta-llama/Llama-3.1-8B", "a b", "$(id)", "日本語 é"}, []string{"a\nb", "\x1b[31m", "a\u202eb", "a\u2066b\u2069", "a\u200fb", "a\u2029b", "a\ufeffb", "\u061c"}},
		{Param{Name: "m", Pattern: "MIG-[0-9a-f-]+"}, []string{"MIG-0af3"}, []string{"MIG-0af3 x", "GPU-1"}},
	} {
		ps := []Param{tc.p}
		CheckParamDefs(ps, func(_ int, _, msg string) { t.Fatalf("%s: %s", tc.p.Name, msg) })
		p := ps[0]
		for _, v := range tc.good {
			if err := p.Check(v); err != nil {
				t.Errorf("%s %q: %v", p.Name, v, err)
			}
		}
		for _, v := range tc.bad {
			if err := p.Check(v); err == nil {
				t.Errorf("%s %q accepted", p.Name, v)
			}
		}
	}
}
