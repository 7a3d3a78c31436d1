/*
 * profiles.h - device profiles by name (dfg-profile --device v100-pcie3-16gb).
 *
 * A PROFILE argument that names an existing file, contains a '/', ends in
 * ".json" or is "-" is a path and is used as given.  Otherwise it is the name
 * of a bundled profile, NAME.json, looked up in these folders in order:
 *   1. each folder of $SWAPADVISOR_PROFILES (colon-separated);
 *   2. DIR/../share/swapadvisor/profiles, DIR being the folder of the running
 *      executable (an installed tree, wherever PREFIX was);
 *   3. DIR/../profiles (the tools run from a source tree's bin/).
 */
#ifndef CLI_PROFILES_H
#define CLI_PROFILES_H

#include <stddef.h>

#include "swapadvisor/sa_common.h"

/* Resolves arg to a path in buf (size bytes).  SA_EUSAGE (err names the
 * folders searched and the names found) when no bundled profile has that
 * name; SA_EUSAGE too when the path does not fit buf. */
sa_status cli_find_profile(const char *arg, char *buf, size_t size, sa_err *err);

/* Prints "NAME<TAB>PATH" for every bundled profile, sorted by name, the
 * first folder winning when two hold the same name.  Returns 0, or 4 when no
 * folder holds any (the message on stderr). */
int cli_list_profiles(const char *tool);

#endif
