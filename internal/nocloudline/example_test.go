package nocloudline_test

import (
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/nocloudline"
)

func ExampleParse() {
	md, found := nocloudline.Parse("ro quiet ds=nocloud;i=iid-01;h=web1;s=http://192.0.2.1/seeds/")
	fmt.Println(found, md["instance-id"], md["local-hostname"], md["seedfrom"], md["dsmode"])
	// Output: true iid-01 web1 http://192.0.2.1/seeds/ net
}
