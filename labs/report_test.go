package labs_test

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/labs"
)

// reportRecord is a finished record of one lab on hosts, of a simulated
// fleet or not, started at minute i.
func reportRecord(i int, simulated bool, hosts ...string) *labs.Record {
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Simulated: simulated, Complete: true,
		Started: time.Date(2026, 11, 29, 10, i, 0, 0, time.UTC), Finished: time.Date(2026, 11, 29, 10, i, 30, 0, time.UTC)}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, labs.HostRecord{Host: h, Passed: true, Scores: []labs.Score{{ID: "nvlink-mesh", Status: "PASS", Summary: "ok"}}})
	}
	return r
}

// junit.xml of a simulated fleet's run says so where CI shows it: each
// suite's name, and a simulated property.
func TestJUnitSaysSimulated(t *testing.T) {
	type suites struct {
		Name   string `xml:"name,attr"`
		Suites []struct {
			Name       string `xml:"name,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	for _, simulated := range []bool{true, false} {
		x, err := reportRecord(0, simulated, "dgx01", "dgx02").JUnit()
		if err != nil {
			t.Fatal(err)
		}
		var s suites
		if err := xml.Unmarshal(x, &s); err != nil || len(s.Suites) != 2 {
			t.Fatalf("junit.xml: %v\n%s", err, x)
		}
		if !simulated && strings.Contains(string(x), "<properties") {
			t.Errorf("a real fleet's junit.xml has properties:\n%s", x)
		}
		if got := strings.Contains(s.Name, "SIMULATED"); got != simulated {
			t.Errorf("simulated %v: testsuites name %q", simulated, s.Name)
		}
		for _, suite := range s.Suites {
			prop := false
			for _, p := range suite.Properties {
				prop = prop || p.Name == "simulated" && p.Value == "true"
			}
			if strings.Contains(suite.Name, "SIMULATED") != simulated || prop != simulated {
				t.Errorf("simulated %v: suite %q, simulated property %v\n%s", simulated, suite.Name, prop, x)
			}
		}
	}
}
