package datasource_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seedkeeper/seedkeeper/datasource"
)

// The envvar transport needs neither a VMware platform nor the tools.
func ExampleReadVMware() {
	env := map[string]string{
		"VMX_GUESTINFO":                   "1",
		"VMX_GUESTINFO_METADATA":          "instance-id: vm-42\nlocal-hostname: web1\n",
		"VMX_GUESTINFO_USERDATA":          "I2Nsb3VkLWNvbmZpZwo=",
		"VMX_GUESTINFO_USERDATA_ENCODING": "base64",
	}
	md, err := datasource.ReadVMware(context.Background(), datasource.Options{
		Root:   "/nonexistent", // no DMI here: no machine identity
		VMware: datasource.VMwareOptions{Getenv: func(k string) string { return env[k] }},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(md.Origin.Transport, md.InstanceID, md.Hostname)
	fmt.Printf("%q\n", md.UserData)
	// Output:
	// envvar vm-42 web1
	// "#cloud-config\n"
}

// A CommandRunner stands in for vmware-rpctool here; it answers the way
// the real tool does.
func ExampleRunnerFunc() {
	root, _ := os.MkdirTemp("", "vmware-example")
	defer os.RemoveAll(root)
	dmi := filepath.Join(root, "sys/class/dmi/id")
	os.MkdirAll(dmi, 0o755)
	os.WriteFile(filepath.Join(dmi, "product_name"), []byte("VMware7,1\n"), 0o644)

	vmx := map[string]string{"guestinfo.metadata": `{"instance-id": "i-7", "network-drivers": "vmxnet3"}`}
	rpctool := datasource.RunnerFunc(func(_ context.Context, argv []string) (datasource.CommandResult, error) {
		key := strings.TrimPrefix(argv[len(argv)-1], "info-get ")
		if v, ok := vmx[key]; ok {
			return datasource.CommandResult{Stdout: []byte(v + "\n")}, nil
		}
		return datasource.CommandResult{Stderr: []byte("No value found\n"), ExitCode: 1}, nil
	})
	md, err := datasource.ReadVMware(context.Background(), datasource.Options{
		Root: root,
		VMware: datasource.VMwareOptions{
			Runner: rpctool,
			Getenv: func(string) string { return "" },
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(md.Origin.Transport, md.InstanceID, md.NetworkDrivers)
	// Output: vmware-rpctool i-7 [vmxnet3]
}

// The metadata sets the hotplug driver allowlist; a typo in it allows
// nothing, and NetworkDriversError says why.
func ExampleNetworkDriversError() {
	for _, drivers := range []string{"vmxnet3, e1000e", "vmxnet3 e1000e"} {
		env := map[string]string{
			"VMX_GUESTINFO":          "1",
			"VMX_GUESTINFO_METADATA": "instance-id: vm-42\nnetwork-drivers: " + drivers + "\n",
		}
		md, err := datasource.ReadVMware(context.Background(), datasource.Options{
			Root:   "/nonexistent",
			VMware: datasource.VMwareOptions{Getenv: func(k string) string { return env[k] }},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		err = datasource.NetworkDriversError(md)
		fmt.Println(md.NetworkDrivers, errors.Is(err, datasource.ErrBadNetworkDrivers))
	}
	// Output:
	// [vmxnet3 e1000e] false
	// [] true
}

// wait-on-network takes cloud-init's boolean words; a family that is not
// one waits for nothing, and a warning says which.
func ExampleWaitOnNetwork() {
	env := map[string]string{
		"VMX_GUESTINFO":          "1",
		"VMX_GUESTINFO_METADATA": "instance-id: vm-42\nwait-on-network: {ipv4: \"yes\", ipv6: perhaps}\n",
	}
	md, err := datasource.ReadVMware(context.Background(), datasource.Options{
		Root:   "/nonexistent",
		VMware: datasource.VMwareOptions{Getenv: func(k string) string { return env[k] }},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("waiting for", md.WaitOnNetwork)
	fmt.Println(md.Warnings)
	// Output:
	// waiting for ipv4
	// [bad wait-on-network: ipv6: a string of 7 bytes that is not a boolean word (want true, false, yes, no, on, off, 1 or 0); waiting for ipv4]
}

// SetGuestinfo sends the RPC as cloud-init does: one argument to
// vmware-rpctool, after --cmd to vmtoolsd.
func ExampleSetGuestinfo() {
	show := datasource.RunnerFunc(func(_ context.Context, argv []string) (datasource.CommandResult, error) {
		fmt.Printf("%q\n", argv)
		return datasource.CommandResult{}, nil
	})
	ctx := context.Background()
	_ = datasource.SetGuestinfo(ctx, show, datasource.ToolRPCTool, "local-ipv4", "192.0.2.10")
	_ = datasource.SetGuestinfo(ctx, show, datasource.ToolVMToolsd, "local-ipv6", "2001:db8::10")
	// Output:
	// ["vmware-rpctool" "info-set guestinfo.local-ipv4 192.0.2.10"]
	// ["vmtoolsd" "--cmd" "info-set guestinfo.local-ipv6 2001:db8::10"]
}
