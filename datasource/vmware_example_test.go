package datasource_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/seedkeeper/seedkeeper/datasource"
)

// The VMware source's envvar transport needs neither a VMware platform
// nor the tools.
func ExampleRead_vmware() {
	env := map[string]string{
		"VMX_GUESTINFO":                   "1",
		"VMX_GUESTINFO_METADATA":          "instance-id: vm-42\nlocal-hostname: web1\n",
		"VMX_GUESTINFO_USERDATA":          "I2Nsb3VkLWNvbmZpZwo=",
		"VMX_GUESTINFO_USERDATA_ENCODING": "base64",
	}
	md, err := datasource.Read(context.Background(), datasource.SourceVMware, datasource.Options{
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

// The metadata sets the hotplug driver allowlist; a typo in it allows
// nothing, and NetworkDriversError says why.
func ExampleNetworkDriversError() {
	for _, drivers := range []string{"vmxnet3, e1000e", "vmxnet3 e1000e"} {
		env := map[string]string{
			"VMX_GUESTINFO":          "1",
			"VMX_GUESTINFO_METADATA": "instance-id: vm-42\nnetwork-drivers: " + drivers + "\n",
		}
		md, err := datasource.Read(context.Background(), datasource.SourceVMware, datasource.Options{
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
	md, err := datasource.Read(context.Background(), datasource.SourceVMware, datasource.Options{
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
