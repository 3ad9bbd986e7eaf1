// The public header compiled as C++ (extern "C" and no C-only constructs).
#include "tilec.h"

int main() {
    tilec_region r = tilec_region_whole(nullptr);
    return r.nindex == 0 && TILEC_DTYPE_COUNT == 7 ? 0 : 1;
}
