// Package seedimage reads the root-directory files and the volume label of a
// cloud-init seed filesystem (a "cidata" disk) from an image file or a block
// device, in process and read-only, without mounting it.
//
// Two filesystem types are read, the two cloud-init's NoCloud accepts:
//
//   - ISO9660 ("iso9660"), as written by genisoimage, cloud-localds and
//     Proxmox VE: Rock Ridge names are used when present, else Joliet names,
//     else the plain ISO9660 names.
//   - FAT12, FAT16 and FAT32 ("vfat"), as written by cloud-localds -f vfat and
//     mkfs.vfat+mcopy, with VFAT long names.
//
// The filesystem code is github.com/diskfs/go-diskfs (its iso9660, fat12,
// fat16 and fat32 packages, imported directly). This package adds what a
// seed reader needs around it: format detection and labels read from the
// first sectors, checks that make a corrupt image an error instead of a
// hang, a panic or a huge allocation (a cycle in the FAT, a FAT larger than
// the image, Rock Ridge continuation loops, files over MaxFileSize), and the
// name mapping below.
//
// # Name mapping
//
// ReadFile("meta-data") looks the name up in the root directory in three
// steps, stopping at the first that matches:
//
//  1. the exact name (Rock Ridge, Joliet and VFAT long names);
//  2. the same name ignoring case;
//  3. the name as a plain ISO9660 or DOS 8.3 tool would have mangled it:
//     both sides upper-cased with any ";1" version and trailing "." removed,
//     and the wanted name compared in its full form and as 8.3 (base cut to
//     8 characters, extension to 3), each with '-' kept and with every
//     character outside A-Z, 0-9, '_' and '.' replaced by '_'.
//
// So a genisoimage image made without -R and -J, whose root lists
// META_DAT.;1, USER_DAT.;1, VENDOR_D.;1 and NETWORK_.;1 (or, with
// -iso-level 3, META_DATA.;1 and so on), still yields meta-data, user-data,
// vendor-data and network-config. When step 3 matches more than one entry
// the lookup fails rather than guess.
package seedimage
