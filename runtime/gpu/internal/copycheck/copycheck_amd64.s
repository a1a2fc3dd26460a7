#include "textflag.h"

// func copyCheckAVX2(dst, src unsafe.Pointer, n uintptr, stream bool) uintptr
TEXT ·copyCheckAVX2(SB), NOSPLIT, $0-40
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVBLZX stream+24(FP), DX
	XORQ    AX, AX
	MOVL    $0x7f800000, R8
	MOVQ    R8, X8
	VPBROADCASTD X8, Y8 // the exponent's mask in every word

	TESTQ DX, DX
	JNZ   streamloop

cachedloop:
	CMPQ AX, CX
	JAE  done
	VMOVDQU 0(SI)(AX*1), Y0
	VMOVDQU 32(SI)(AX*1), Y1
	VMOVDQU 64(SI)(AX*1), Y2
	VMOVDQU 96(SI)(AX*1), Y3
	VPAND    Y8, Y0, Y4
	VPAND    Y8, Y1, Y5
	VPAND    Y8, Y2, Y6
	VPAND    Y8, Y3, Y7
	VPCMPEQD Y8, Y4, Y4
	VPCMPEQD Y8, Y5, Y5
	VPCMPEQD Y8, Y6, Y6
	VPCMPEQD Y8, Y7, Y7
	VPOR     Y5, Y4, Y4
	VPOR     Y7, Y6, Y6
	VPOR     Y6, Y4, Y4
	VPTEST   Y4, Y4
	JNZ      done
	VMOVDQU Y0, 0(DI)(AX*1)
	VMOVDQU Y1, 32(DI)(AX*1)
	VMOVDQU Y2, 64(DI)(AX*1)
	VMOVDQU Y3, 96(DI)(AX*1)
	ADDQ $128, AX
	JMP  cachedloop

streamloop:
	CMPQ AX, CX
	JAE  fence
	PREFETCHNTA 512(SI)(AX*1)
	VMOVDQU 0(SI)(AX*1), Y0
	VMOVDQU 32(SI)(AX*1), Y1
	VMOVDQU 64(SI)(AX*1), Y2
	VMOVDQU 96(SI)(AX*1), Y3
	VPAND    Y8, Y0, Y4
	VPAND    Y8, Y1, Y5
	VPAND    Y8, Y2, Y6
	VPAND    Y8, Y3, Y7
	VPCMPEQD Y8, Y4, Y4
	VPCMPEQD Y8, Y5, Y5
	VPCMPEQD Y8, Y6, Y6
	VPCMPEQD Y8, Y7, Y7
	VPOR     Y5, Y4, Y4
	VPOR     Y7, Y6, Y6
	VPOR     Y6, Y4, Y4
	VPTEST   Y4, Y4
	JNZ      fence
	VMOVNTDQ Y0, 0(DI)(AX*1)
	VMOVNTDQ Y1, 32(DI)(AX*1)
	VMOVNTDQ Y2, 64(DI)(AX*1)
	VMOVNTDQ Y3, 96(DI)(AX*1)
	ADDQ $128, AX
	JMP  streamloop

fence:
	SFENCE

done:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
