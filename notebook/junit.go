package notebook

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// JUnit types: the subset of the JUnit XML format CI systems read.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *struct{}     `xml:"skipped,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// A Result is one executed notebook, for the JUnit and summary reports.
type Result struct {
	Name     string // the notebook's path
	Notebook *Notebook
	Report   *Report
}

// JUnit renders results as JUnit XML: a test suite per notebook, a test
// case per code cell ("cell 3 [id]: first line"), failed cells with their
// error and traceback, cells not executed as skipped.
func JUnit(results []Result) ([]byte, error) {
	var doc junitSuites
	for _, r := range results {
		s := junitSuite{Name: r.Name, Time: seconds(r.Report.Duration.Seconds())}
		for _, cr := range r.Report.Cells {
			c := r.Notebook.Cells[cr.Index]
			tc := junitCase{
				Name:      fmt.Sprintf("cell %d [%s]: %s", cr.Index+1, cr.ID, firstLine(c.Source)),
				Classname: r.Name,
				Time:      seconds(cr.Duration.Seconds()),
			}
			switch {
			case cr.Skipped:
				tc.Skipped = &struct{}{}
				s.Skipped++
			case cr.Err != nil && !cr.Expected:
				tc.Failure = &junitFailure{Message: cr.Err.Error(), Type: cr.Err.Name, Text: strings.Join(cr.Err.Traceback, "\n")}
				s.Failures++
			}
			s.Cases = append(s.Cases, tc)
		}
		s.Tests = len(s.Cases)
		doc.Suites = append(doc.Suites, s)
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }
