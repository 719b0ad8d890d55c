# shellcheck shell=bash
# The real applications' inputs, shared by bench/watchdog.sh and bench/monitor-cpu.sh. Sourced.

# Debian's LAMMPS examples (lammps-examples), where this Debian keeps them; empty if not installed.
lammps_examples=""
for d in /usr/share/lammps/examples /usr/share/doc/lammps-examples/examples; do
  [ -f "$d/melt/in.melt" ] && [ -f "$d/peptide/in.peptide" ] && { lammps_examples=$d; break; }
done

# lammps_input NAME DIR SECONDS: the LAMMPS example NAME (melt or peptide) copied into DIR and
# lengthened: a run of 10^8 steps that LAMMPS itself ends after SECONDS of wall time (`timer
# timeout`, checked every 10 steps and agreed by all ranks), thermo output every 1000 steps.
lammps_input() {
  local name=$1 dir=$2 seconds=$3
  cp "$lammps_examples/$name/"* "$dir/"
  sed -i -e "s/^run\s.*/timer timeout $(printf '%d:%02d:%02d' $((seconds / 3600)) $((seconds % 3600 / 60)) $((seconds % 60))) every 10\nrun 100000000/" \
    -e 's/^thermo\s.*/thermo 1000/' "$dir/in.$name"
}

# cp2k_input DIR SECONDS: an input for Debian's cp2k (cp2k.psmp) in DIR/md.inp: a real code nobody
# here wrote, Fortran through ScaLAPACK, FFTW and Open MPI's Fortran bindings, whose stacks run
# 20-40 frames deep.
# Two water molecules, DFT (Quickstep, DZVP), NVE molecular dynamics until cp2k's own WALLTIME
# (SECONDS) ends it.
cp2k_input() {
  cat >"$1/md.inp" <<EOT
&GLOBAL
  PROJECT WATER_MD
  RUN_TYPE MD
  PRINT_LEVEL LOW
  WALLTIME $2
&END GLOBAL
&MOTION
  &MD
    ENSEMBLE NVE
    STEPS 10000000
    TIMESTEP 0.5
    TEMPERATURE 300.0
  &END MD
  &PRINT
    &TRAJECTORY OFF
    &END
    &RESTART OFF
    &END
    &RESTART_HISTORY OFF
    &END
  &END PRINT
&END MOTION
&FORCE_EVAL
  METHOD Quickstep
  &DFT
    BASIS_SET_FILE_NAME BASIS_SET
    POTENTIAL_FILE_NAME POTENTIAL
    &MGRID
      CUTOFF 200
    &END MGRID
    &SCF
      EPS_SCF 1.0E-5
      SCF_GUESS ATOMIC
      &OT
      &END OT
    &END SCF
    &XC
      &XC_FUNCTIONAL Pade
      &END XC_FUNCTIONAL
    &END XC
  &END DFT
  &SUBSYS
    &CELL
      ABC 6.0 6.0 6.0
    &END CELL
    &COORD
    O   0.000000    0.000000   -0.065587
    H   0.000000   -0.757136    0.520545
    H   0.000000    0.757136    0.520545
    O   3.000000    3.000000    2.934413
    H   3.000000    2.242864    3.520545
    H   3.000000    3.757136    3.520545
    &END COORD
    &KIND H
      BASIS_SET DZVP-GTH-PADE
      POTENTIAL GTH-PADE-q1
    &END KIND
    &KIND O
      BASIS_SET DZVP-GTH-PADE
      POTENTIAL GTH-PADE-q6
    &END KIND
  &END SUBSYS
&END FORCE_EVAL
EOT
}
