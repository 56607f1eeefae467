/*
 * ProcessPrng for Wine 8, for the Windows smoke tests only; never shipped.
 *
 * Rust's standard library takes its random bytes from ProcessPrng in bcryptprimitives.dll,
 * which every Windows since 10 has and Wine 8 lacks. tests/wine/smoke builds this file into
 * the test's own Wine prefix; it asks RtlGenRandom (advapi32's SystemFunction036), which Wine
 * has, for the same bytes.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
