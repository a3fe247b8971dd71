package mdata

import (
	"context"
	"os/exec"
	"time"
)

// platformProductName asks the kernel environment, where the loader puts
// the SMBIOS strings.
func platformProductName() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/bin/kenv", "-q", "smbios.system.product").Output()
	if err != nil {
		return ""
	}
	return string(out)
}
