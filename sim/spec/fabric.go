package spec

import (
	"fmt"
	"os"
	"strings"
)

// FabricManager is what is wrong with the host's NVSwitch fabric manager.
type FabricManager struct {
	// Stopped: nv-fabricmanager does not run.
	Stopped bool `json:"stopped,omitempty"`
	// Log adds lines to its log (/var/log/fabricmanager.log), as it writes
	// them: "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch
	// non-fatal error 12028 on fid 0 ...".
	Log []string `json:"log,omitempty"`
}

// fabricManagerPID is the simulated daemon's process id.
const fabricManagerPID = 2210

// fabricManagerLog is the start of the simulated daemon's log: INFO
// lines of testdata/fixtures/fabricmanager-log/feb2025-*.log.
const fabricManagerLog = `[Feb 25 2025 13:59:45] [INFO] [tid 1808] multicast group 0 is freed.
[Feb 25 2025 13:59:45] [INFO] [tid 1808] multicast group 0 is allocated.
`

// validateFabricManager reports a log line no daemon would write.
func (f Faults) validateFabricManager() error {
	for i, l := range f.FabricManager.Log {
		if strings.ContainsAny(l, "\r\n") || strings.TrimSpace(l) == "" {
			return fmt.Errorf("fabric_manager.log[%d]: want one line of text", i)
		}
	}
	return nil
}

// WriteFabricManager writes the fabric manager's process into the
// simulated /proc (procDir), unless the knob stopped it, and its log to
// logFile.
func (f Faults) WriteFabricManager(procDir, logFile string) error {
	log := fabricManagerLog
	for _, l := range f.FabricManager.Log {
		log += l + "\n"
	}
	if err := os.WriteFile(logFile, []byte(log), 0o600); err != nil {
		return err
	}
	if f.FabricManager.Stopped {
		return nil
	}
	return writeProcess(procDir, Process{PID: fabricManagerPID, Name: "nv-fabricmanage"}, nil)
}
